import { el } from './element-builder.ts';
import { showNotice } from './page-frame.ts';
import { readToken } from './session-token.ts';

/**
 * A link to a CSV export of the API (`?format=csv`), for whoever reconciles the duplicates. Without
 * a token the browser follows it and saves the file as the API streams it. A link cannot carry the
 * bearer token, so with one the page fetches the file with it and hands the browser the result.
 */
export function csvDownloadLink(path: string, fileName: string, label: string): HTMLAnchorElement {
  const link = el('a', { href: path, download: fileName, class: 'download-link' }, label);
  link.addEventListener('click', (event) => {
    const token = readToken();
    if (token === null) return;
    event.preventDefault();
    void download(path, fileName, token);
  });
  return link;
}

async function download(path: string, fileName: string, token: string): Promise<void> {
  try {
    const response = await fetch(path, {
      headers: { accept: 'text/csv', authorization: `Bearer ${token}` },
      cache: 'no-store',
      credentials: 'omit',
    });
    if (!response.ok) throw new Error(`the API answered ${response.status}`);
    const url = URL.createObjectURL(await response.blob());
    // Not through el(): a blob: URL of the page's own download is no link to elsewhere.
    const save = document.createElement('a');
    save.href = url;
    save.download = fileName;
    save.click();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  } catch (error) {
    showNotice('error', `the CSV could not be downloaded: ${(error as Error).message}`);
  }
}
