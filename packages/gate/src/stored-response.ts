/**
 * An HTTP response as the fastify adapter stores it for replay: the status, the headers a replay
 * must carry, and the serialized body. Bodies are kept as text when they are text and as base64
 * when they are bytes, so the store only ever holds strings.
 */
export interface StoredResponse {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Buffer;
}

interface Encoded {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  encoding: 'utf8' | 'base64';
}

export function encodeStoredResponse(response: StoredResponse): string {
  const encoded: Encoded =
    typeof response.body === 'string'
      ? {
          statusCode: response.statusCode,
          headers: { ...response.headers },
          body: response.body,
          encoding: 'utf8',
        }
      : {
          statusCode: response.statusCode,
          headers: { ...response.headers },
          body: response.body.toString('base64'),
          encoding: 'base64',
        };
  return JSON.stringify(encoded);
}

export function decodeStoredResponse(text: string): StoredResponse {
  const encoded = JSON.parse(text) as Encoded;
  return {
    statusCode: encoded.statusCode,
    headers: encoded.headers,
    body: encoded.encoding === 'base64' ? Buffer.from(encoded.body, 'base64') : encoded.body,
  };
}
