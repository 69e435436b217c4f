/** Where a listener is bound, after port 0 was resolved to the port the system picked. */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/** `host:port`, with an IPv6 host in brackets. */
export function formatHostPort(address: ListenAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}

/** A started receiver. `stop` is idempotent: later calls return the first call's promise. */
export interface Receiver {
  readonly address: ListenAddress;
  /** Bytes of request bodies (gRPC messages) still arriving, not yet admitted: what its buffer bound counts. */
  bufferedBytes(): number;
  /**
   * Stops accepting new requests, waits up to `drainTimeoutMillis` for those in flight to be
   * answered, then closes the connections that remain.
   */
  stop(drainTimeoutMillis: number): Promise<void>;
}
