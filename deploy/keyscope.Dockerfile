# keyscope as docker-compose.yml builds it: the workspace with its dependencies, run from source
# (as `pnpm keyscope`). The role comes from KEYSCOPE_ROLE or `serve --role`.
FROM node:20-bookworm-slim
# better-sqlite3 builds from source when no prebuilt binary matches.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN npx --yes pnpm@10.34.9 install --frozen-lockfile
ENTRYPOINT ["node", "--max-semi-space-size=64", "--min-semi-space-size=64", "--import", "tsx", "services/analyzer/src/cli.ts"]
CMD ["serve"]
