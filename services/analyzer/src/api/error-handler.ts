import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { type ErrorDefinition, isKeyscopeError, KeyscopeError } from '@keyscope/errors';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  API_BAD_PARAMETER,
  API_BAD_REQUEST,
  API_BODY_TOO_LARGE,
  API_HEADERS_TOO_LARGE,
  API_INTERNAL,
  API_METHOD_NOT_ALLOWED,
  API_NOT_FOUND,
  API_REQUEST_TIMEOUT,
  API_UNSUPPORTED_MEDIA_TYPE,
  API_URI_TOO_LONG,
} from './api-errors.ts';

/** The longest a caller's input is quoted back in an error message. */
export const ECHO_MAX_CHARS = 100;

/** Longest path parameter (decoded): keys and incident ids. Keys default to at most 1 KiB. */
export const PATH_PARAMETER_MAX_CHARS = 4096;

/** The API takes no request bodies; this bounds what it reads before refusing one. */
export const API_BODY_LIMIT_BYTES = 64 * 1024;

/**
 * A caller's input as an error message quotes it: at most ECHO_MAX_CHARS characters, then `…`.
 * A 5 KB cursor or key is named, not sent back whole.
 */
export function excerpt(input: string): string {
  if (input.length <= ECHO_MAX_CHARS) return input;
  let cut = ECHO_MAX_CHARS;
  // Do not split a surrogate pair.
  const last = input.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut--;
  return `${input.slice(0, cut)}…`;
}

/** fastify's own refusals, by their code, as keyscope's. */
const FASTIFY_CODES: Record<string, ErrorDefinition> = {
  FST_ERR_VALIDATION: API_BAD_PARAMETER,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: API_UNSUPPORTED_MEDIA_TYPE,
  FST_ERR_CTP_BODY_TOO_LARGE: API_BODY_TOO_LARGE,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: API_BAD_REQUEST,
  FST_ERR_CTP_EMPTY_JSON_BODY: API_BAD_REQUEST,
  FST_ERR_CTP_INVALID_JSON_BODY: API_BAD_REQUEST,
  FST_ERR_BAD_URL: API_BAD_REQUEST,
  FST_ERR_MAX_PARAM_LENGTH: API_URI_TOO_LONG,
};

/** Any other refusal below 500, by its status. */
const BY_STATUS: Record<number, ErrorDefinition> = {
  400: API_BAD_REQUEST,
  404: API_NOT_FOUND,
  405: API_METHOD_NOT_ALLOWED,
  408: API_REQUEST_TIMEOUT,
  413: API_BODY_TOO_LARGE,
  414: API_URI_TOO_LONG,
  415: API_UNSUPPORTED_MEDIA_TYPE,
  431: API_HEADERS_TOO_LARGE,
};

/** What the API answers for an error: keyscope's code and status, and a message safe to send. */
export function errorReply(error: Error): { status: number; code: string; message: string } {
  if (isKeyscopeError(error)) return { status: error.httpStatus, code: error.code, message: error.message };
  const fastifyError = error as Partial<FastifyError> & { validation?: unknown };
  if (fastifyError.validation !== undefined) {
    return { status: 400, code: API_BAD_PARAMETER.code, message: error.message };
  }
  const status = fastifyError.statusCode ?? 500;
  const known =
    (fastifyError.code === undefined ? undefined : FASTIFY_CODES[fastifyError.code]) ?? BY_STATUS[status];
  if (status < 500) {
    const definition = known ?? API_BAD_REQUEST;
    return { status: definition.httpStatus, code: definition.code, message: messageOf(fastifyError) };
  }
  return { status: 500, code: API_INTERNAL.code, message: 'internal error' };
}

/** fastify's message for its own errors, without the caller's input it would quote. */
function messageOf(error: Partial<FastifyError>): string {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'the API reads request bodies as application/json or text/plain only';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `request bodies are limited to ${API_BODY_LIMIT_BYTES} bytes`;
    default:
      return excerpt(error.message ?? STATUS_CODES[error.statusCode ?? 400] ?? 'bad request');
  }
}

/** Methods a path may have; the ones it does go in `Allow` when another is used. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * Every answer but a success in keyscope's shape, `{ error: { code, message } }`, fastify's own
 * included: validation, bodies it cannot parse, unknown routes, a known path with the wrong method
 * (405 with `Allow`). Errors raised before routing (a malformed URL, a path segment over
 * PATH_PARAMETER_MAX_CHARS) go through `frameworkErrors`, passed to `Fastify()`.
 */
export function installErrorReplies(app: FastifyInstance): void {
  app.setErrorHandler((error: Error, _request, reply) => {
    const answer = errorReply(error);
    if (answer.status >= 500) app.log.error(error);
    // A refusal that says when to come back (a throttled client address: AuthThrottledError).
    const retryAfterSeconds = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds;
    if (typeof retryAfterSeconds === 'number') reply.header('retry-after', String(retryAfterSeconds));
    return reply.status(answer.status).send({ error: { code: answer.code, message: answer.message } });
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0]!;
    const allowed = METHODS.filter(
      (method) => method !== request.method && app.findRoute({ method, url: path }) !== null,
    );
    if (allowed.length > 0) {
      return reply
        .status(405)
        .header('allow', allowed.join(', '))
        .send({
          error: {
            code: API_METHOD_NOT_ALLOWED.code,
            message: `${excerpt(path)} answers ${allowed.join(', ')}, not ${request.method}`,
          },
        });
    }
    return reply.status(404).send({
      error: { code: API_NOT_FOUND.code, message: `no route ${request.method} ${excerpt(path)}` },
    });
  });
}

/** fastify's `frameworkErrors`: refusals raised while routing, before any hook or handler. */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  let refusal: KeyscopeError;
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    refusal = new KeyscopeError(
      API_URI_TOO_LONG,
      `a path segment is longer than ${PATH_PARAMETER_MAX_CHARS} characters once decoded`,
    );
  } else if (error.code === 'FST_ERR_BAD_URL') {
    refusal = new KeyscopeError(API_BAD_REQUEST, 'the URL path is not valid percent-encoding');
  } else {
    refusal = new KeyscopeError(API_INTERNAL, 'internal error');
  }
  void reply.status(refusal.httpStatus).send({ error: { code: refusal.code, message: refusal.message } });
}

/**
 * fastify's `clientErrorHandler`: a request Node.js cannot parse (or that did not arrive in
 * time) never reaches a route, so the answer is written to the socket here, in keyscope's shape.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let definition: ErrorDefinition = API_BAD_REQUEST;
  let message = 'the request is not valid HTTP/1.1';
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    definition = API_REQUEST_TIMEOUT;
    message = 'the request did not arrive in time';
  } else if (error.code === 'HPE_HEADER_OVERFLOW') {
    definition = API_HEADERS_TOO_LARGE;
    message = 'the request line and headers are larger than this server accepts';
  }
  const body = JSON.stringify({ error: { code: definition.code, message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${definition.httpStatus} ${STATUS_CODES[definition.httpStatus]}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
