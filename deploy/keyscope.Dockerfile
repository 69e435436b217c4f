# keyscope as docker-compose.yml builds it: the tarball `pnpm pack:cli` makes, installed with npm
# as the README's "Install" says, run by node with the flags of keyscope's service
# (services/analyzer/src/node-flags.ts, SERVICE_NODE_FLAGS): the container runs serve, its role from
# KEYSCOPE_ROLE or `serve --role`.
FROM node:20-bookworm-slim AS pack
# better-sqlite3 builds from source when no prebuilt binary matches.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN npx --yes pnpm@10.34.9 install --frozen-lockfile \
  && npx --yes pnpm@10.34.9 pack:cli \
  && npm install -g --prefix /opt/keyscope --allow-scripts=better-sqlite3 dist/keyscope-*.tgz

# The same base image, for better-sqlite3's addon; no compiler, no workspace, no TypeScript.
FROM node:20-bookworm-slim
COPY --from=pack /opt/keyscope /opt/keyscope
WORKDIR /var/lib/keyscope
ENTRYPOINT ["node", "--max-semi-space-size=64", "--min-semi-space-size=64", "/opt/keyscope/lib/node_modules/keyscope/bin/keyscope.js"]
CMD ["serve"]
