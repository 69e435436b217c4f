import { describe, expect, it } from 'vitest';
import { createProgressMeter, formatBytes, progressLine } from '../../src/analyze/progress-meter.ts';

function terminal(isTTY: boolean) {
  const writes: string[] = [];
  return { isTTY, columns: 100, writes, write: (text: string) => writes.push(text) };
}

describe('progress meter', () => {
  it('writes nothing when stderr is not a terminal', () => {
    const stream = terminal(false);
    const meter = createProgressMeter(stream, 1000);
    meter.update(10, 5);
    meter.clear();
    meter.finish();
    expect(stream.writes).toEqual([]);
  });

  it('redraws in place at most ten times a second and erases itself at the end', () => {
    const stream = terminal(true);
    let now = 0;
    const meter = createProgressMeter(stream, 1000, () => now);
    meter.update(100, 10);
    now = 50;
    meter.update(200, 20);
    now = 100;
    meter.update(300, 30);
    meter.finish();
    meter.update(400, 40);
    expect(stream.writes).toHaveLength(3);
    expect(stream.writes[0]!.startsWith('\r\x1b[K[')).toBe(true);
    expect(stream.writes[0]).toMatch(/100 B \/ 1000 B\s+10%/);
    expect(stream.writes[1]).toContain('300 B / 1000 B');
    expect(stream.writes[1]).toContain('300 spans/s');
    expect(stream.writes[2]).toBe('\r\x1b[K');
  });

  it('erases the line before other output and redraws on the next update', () => {
    const stream = terminal(true);
    let now = 0;
    const meter = createProgressMeter(stream, 1000, () => now);
    meter.update(100, 10);
    meter.clear();
    now = 10;
    meter.update(200, 20);
    expect(stream.writes).toEqual([
      expect.stringContaining('100 B'),
      '\r\x1b[K',
      expect.stringContaining('200 B'),
    ]);
  });

  it('fits the line into the terminal width', () => {
    const stream = { ...terminal(true), columns: 30 };
    createProgressMeter(stream, 10 ** 9).update(10 ** 8, 10 ** 6);
    expect(stream.writes[0]!.length).toBe('\r\x1b[K'.length + 29);
  });

  it('assumes 80 columns on a terminal that reports no size', () => {
    const stream = { ...terminal(true), columns: 0 };
    createProgressMeter(stream, 10 ** 9, () => 0).update(10 ** 8, 10 ** 6);
    expect(stream.writes[0]).toMatch(/spans\/s$/);
  });
});

describe('progressLine', () => {
  it('shows a bar, bytes of the total, percent, spans and spans per second', () => {
    expect(progressLine(512 * 1024, 1024 * 1024, 12_345, 2)).toBe(
      '[======>     ] 512.0 KiB / 1.0 MiB  50%  12,345 spans  6,173 spans/s',
    );
    expect(progressLine(1024 * 1024, 1024 * 1024, 10, 1)).toContain('[============] 1.0 MiB / 1.0 MiB 100%');
  });

  it('shows bytes read alone when the total is unknown (stdin)', () => {
    expect(progressLine(2048, null, 0, 0)).toBe('2.0 KiB read  0 spans  0 spans/s');
  });

  it('formats sizes in binary units', () => {
    expect([formatBytes(1), formatBytes(1536), formatBytes(3 * 1024 ** 3)]).toEqual([
      '1 B',
      '1.5 KiB',
      '3.0 GiB',
    ]);
  });
});
