import { describe, expect, it } from 'vitest';
import { type Logger, rateLimitedLogger } from '../src/logger.ts';

function capture(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    logger: { info: (line) => lines.push(`info: ${line}`), error: (line) => lines.push(`error: ${line}`) },
  };
}

describe('the rate-limited logger', () => {
  it('writes a line repeated within the window once, then again with how often it came', () => {
    const { logger, lines } = capture();
    let now = 0;
    const limited = rateLimitedLogger(logger, { windowMillis: 60_000, now: () => now });
    // A full disk: 445 refused requests in 55 s, then one more after the window.
    for (let i = 0; i < 445; i++) {
      now = i * 125;
      limited.error('pipeline: store transaction failed: database or disk is full');
    }
    expect(lines).toEqual(['error: pipeline: store transaction failed: database or disk is full']);
    now = 60_000;
    limited.error('pipeline: store transaction failed: database or disk is full');
    expect(lines).toEqual([
      'error: pipeline: store transaction failed: database or disk is full',
      'error: pipeline: store transaction failed: database or disk is full (repeated 445 times in the last 60 s)',
    ]);
  });

  it('lets other lines through while one is held back', () => {
    const { logger, lines } = capture();
    let now = 0;
    const limited = rateLimitedLogger(logger, { windowMillis: 10_000, now: () => now });
    limited.error('retention failed: disk I/O error');
    limited.error('retention failed: disk I/O error');
    limited.info('api listening on http://127.0.0.1:8080');
    limited.info('retention failed: disk I/O error');
    now = 1_000;
    limited.error('tick failed: disk I/O error');
    expect(lines).toEqual([
      'error: retention failed: disk I/O error',
      'info: api listening on http://127.0.0.1:8080',
      'info: retention failed: disk I/O error',
      'error: tick failed: disk I/O error',
    ]);
  });

  it('writes the count of a line that stopped repeating once its window ended, and the rest when closed', () => {
    const { logger, lines } = capture();
    let now = 0;
    const limited = rateLimitedLogger(logger, { windowMillis: 10_000, now: () => now });
    limited.error('a');
    limited.error('a');
    limited.error('a');
    now = 5_000;
    limited.error('b');
    limited.error('b');
    limited.flush();
    expect(lines).toEqual(['error: a', 'error: b']);
    now = 12_000;
    limited.flush();
    expect(lines).toEqual(['error: a', 'error: b', 'error: a (repeated 2 times in the last 12 s)']);
    // Counted and forgotten: the next one starts a window of its own.
    limited.error('a');
    expect(lines.at(-1)).toBe('error: a');
    limited.close();
    expect(lines.at(-1)).toBe('error: b (repeated 1 time in the last 7 s)');
    limited.close();
    expect(lines).toHaveLength(5);
  });
});
