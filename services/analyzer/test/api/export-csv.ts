/**
 * An RFC 4180 reader for the export's tests: fields separated by commas, records by CRLF, a quoted
 * field may hold commas, CRLF and doubled quotes. Strict, so that a file the export got wrong
 * fails to read rather than reading as something else.
 */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let i = 0;
  while (i < text.length) {
    let field = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        const quote = text.indexOf('"', i);
        if (quote < 0) throw new Error(`unterminated quoted field at ${i}`);
        field += text.slice(i, quote);
        if (text[quote + 1] === '"') {
          field += '"';
          i = quote + 2;
        } else {
          i = quote + 1;
          break;
        }
      }
    } else {
      const end = text.slice(i).search(/[,\r\n"]/);
      const stop = end < 0 ? text.length : i + end;
      if (text[stop] === '"') throw new Error(`a quote inside an unquoted field at ${stop}`);
      field = text.slice(i, stop);
      i = stop;
    }
    record.push(field);
    if (text[i] === ',') {
      i++;
    } else if (text.startsWith('\r\n', i)) {
      records.push(record);
      record = [];
      i += 2;
    } else if (i < text.length) {
      throw new Error(`expected a comma or CRLF at ${i}, found ${JSON.stringify(text[i])}`);
    }
  }
  if (record.length > 0) throw new Error('the last record does not end with CRLF');
  return records;
}

/** The CSV's records as objects by its header's names. */
export function csvObjects(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  return rows.map((row) => Object.fromEntries(header!.map((name, i) => [name, row[i]!])));
}
