/** The text of the `## heading` section of a markdown file, up to the next `## ` heading. */
export function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`no "## ${heading}" section`);
  const next = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, next < 0 ? undefined : next);
}

/** The fenced blocks of `language` in `text`. */
export function codeBlocks(text: string, language: string): string[] {
  return [...text.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)]
    .filter((match) => match[1] === language)
    .map((match) => match[2]!);
}

/** The blocks that name their file on their first line (`// payments.mjs: …`), by file name. */
export function namedFiles(text: string, language: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const block of codeBlocks(text, language)) {
    const name = /^\/\/ ([\w.-]+\.[cm]?[jt]s):/.exec(block)?.[1];
    if (name !== undefined) files.set(name, block);
  }
  return files;
}
