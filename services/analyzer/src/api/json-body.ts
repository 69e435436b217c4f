import { KeyscopeError } from '@keyscope/errors';
import type { FastifyInstance } from 'fastify';
import { API_BAD_REQUEST } from './api-errors.ts';

/**
 * JSON bodies, where an empty one is no body: `curl -X POST -H 'content-type: application/json'`
 * is how a script marks a change as deliberate without tokens (cross-site.ts), and no API route
 * reads a body. A body that is not JSON is refused with keyscope's code, not fastify's.
 */
export function acceptJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(
        new KeyscopeError(
          API_BAD_REQUEST,
          'the body is not valid JSON, but its content type is application/json',
        ),
        undefined,
      );
    }
  });
}
