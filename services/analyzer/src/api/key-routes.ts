import { withoutRepeatedLogDecisions } from '@keyscope/attempts';
import { executionOutcomes, RAN_TWICE } from '@keyscope/detector';
import type { FastifyInstance } from 'fastify';
import { presentAttempt, presentFinding } from '../presentation/present.ts';
import { KEY_LOOKUP_SCHEMA } from './api-schemas.ts';
import { PATH_PARAMETER_MAX_CHARS } from './error-handler.ts';
import type { RouteSchema } from './openapi.ts';
import {
  attemptsSerializer,
  REFUSAL_RESPONSES,
  type ResourceRouteOptions,
  tenantOf,
} from './route-context.ts';

const KEY: RouteSchema = {
  summary: 'Did key X run twice? Every attempt of one idempotency key and its findings.',
  params: {
    type: 'object',
    properties: {
      key: {
        type: 'string',
        minLength: 1,
        maxLength: PATH_PARAMETER_MAX_CHARS,
        description: 'The idempotency key, percent-encoded.',
      },
    },
    required: ['key'],
  },
  response: { 200: KEY_LOOKUP_SCHEMA, ...REFUSAL_RESPONSES },
};

/** `GET /api/v1/keys/:key`: one key's attempts and findings, and whether it ran twice. */
export async function keyRoutes(app: FastifyInstance, options: ResourceRouteOptions): Promise<void> {
  const { store } = options;
  app.addHook('preHandler', options.authenticateReader);

  app.get<{ Params: { key: string } }>(
    '/api/v1/keys/:key',
    { schema: KEY, serializerCompiler: attemptsSerializer },
    async (request) => {
      const { key } = request.params;
      const tenant = tenantOf(request);
      const attempts = store.attemptsOfKey(key, tenant);
      const findings = store.findings.ofKey(key, tenant);
      // An admission whose request failed before its effect committed is no execution; one whose
      // effect is unknown is counted apart, as its finding is a suspected duplicate (docs/design.md).
      // A decision recorded both as a span and as a log record is one execution.
      const outcomeOf = executionOutcomes(attempts);
      let executions = 0;
      let unconfirmedExecutions = 0;
      for (const attempt of withoutRepeatedLogDecisions(attempts)) {
        if (attempt.kind !== 'server' || attempt.outcome !== 'miss') continue;
        const outcome = outcomeOf(attempt);
        if (outcome === 'executed') executions++;
        else if (outcome === 'unknown') unconfirmedExecutions++;
      }
      const since = store.evidenceSinceUnixMillis();
      return {
        key,
        // A key with no attempt is no evidence either way: the page says so, not "no duplicate".
        seen: attempts.length > 0,
        evidenceSince: since === null ? null : new Date(since).toISOString(),
        executions,
        unconfirmedExecutions,
        ranTwice: findings.some((f) => RAN_TWICE[f.class].executed),
        attempts: attempts.map(presentAttempt),
        findings: findings.map((finding) => presentFinding(finding)),
      };
    },
  );
}
