import { describe, expect, it } from 'vitest';
import { displayWidth } from '../../src/analyze/display-width.ts';
import { type Column, columnWidths, tableLines, wrapLines } from '../../src/analyze/table-layout.ts';

const COLUMNS: Column[] = [
  { header: 'KEY', shrinkOrder: 2, minWidth: 6 },
  { header: 'STORES', shrinkOrder: 1, minWidth: 6 },
  { header: 'RUNS' },
];
const ROWS = [
  ['97a4567a-ca53-4fa9-8485-a27f3e55b737', 'payments-idem@a, payments-idem@b', '2'],
  ['k2', 'A', '12'],
];

describe('table layout', () => {
  it('keeps every column whole when the rows fit', () => {
    expect(columnWidths(COLUMNS, ROWS, 200)).toEqual([36, 32, 4]);
    expect(tableLines(COLUMNS, ROWS, '  ', 0)[1]).toBe(`  ${ROWS[0]!.join('  ')}`);
  });

  it('takes width from the columns in their shrink order, each down to its minimum', () => {
    // 36 + 32 + 4 + 4 gap columns = 76: 16 too many for 60, all from the stores.
    expect(columnWidths(COLUMNS, ROWS, 60)).toEqual([36, 16, 4]);
    // 40: the stores at their 6, the key gives up the rest.
    expect(columnWidths(COLUMNS, ROWS, 40)).toEqual([26, 6, 4]);
  });

  it('fits every line, cutting cells with an ellipsis and, below the minimums, the line itself', () => {
    for (const width of [80, 40, 24, 12]) {
      const lines = tableLines(COLUMNS, ROWS, '  ', width);
      for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(width);
      if (width < 80) expect(lines[1]).toContain('…');
    }
  });

  it('leaves out empty cells at the end of a row, so that no line ends in spaces', () => {
    const lines = tableLines([...COLUMNS, { header: 'CAUSE' }], [['k1', 'A', '2', '']], '', 0);
    expect(lines[1]).toBe('k1   A       2');
  });

  it('wraps text at spaces into at most so many lines, cutting the last with an ellipsis', () => {
    const text = 'Retries of one key executed in 3 different dedup stores: widen the key namespace';
    expect(wrapLines(text, 30, '  ', 2)).toEqual([
      '  Retries of one key executed',
      '  in 3 different dedup stores…',
    ]);
    expect(wrapLines(text, 0, '  ', 2)).toEqual([`  ${text}`]);
    expect(wrapLines('short', 30, '    ', 2, '  x ')).toEqual(['  x short']);
  });
});
