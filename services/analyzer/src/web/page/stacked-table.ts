/**
 * Marks a table to be read as one card per row on narrow screens (styles.css, `table.stacked`):
 * each cell is labelled with its column's heading, so nothing needs the header row or a sideways
 * scroll to be understood. Headings are copied from the table's own header row, so they cannot
 * drift from it.
 */
export function stackedOnNarrowScreens(table: HTMLTableElement): HTMLTableElement {
  table.classList.add('stacked');
  const headings = [...(table.tHead?.rows[0]?.cells ?? [])].map((cell) => cell.textContent ?? '');
  for (const body of table.tBodies) {
    for (const row of body.rows) {
      [...row.cells].forEach((cell, index) => {
        const heading = headings[index];
        if (heading !== undefined && heading !== '') cell.dataset.label = heading;
      });
    }
  }
  return table;
}
