/** A writable stream as `runAnalyze` and the CLI write to it, keeping everything written as text. */
export interface TextSink {
  readonly isTTY: boolean;
  readonly columns?: number;
  write(text: string, callback?: (error?: Error | null) => void): boolean;
  /** Everything written so far. */
  text(): string;
}

export function createTextSink(options: { isTTY?: boolean; columns?: number } = {}): TextSink {
  let written = '';
  return {
    isTTY: options.isTTY ?? false,
    columns: options.columns,
    write(text, callback) {
      written += text;
      callback?.();
      return true;
    },
    text: () => written,
  };
}
