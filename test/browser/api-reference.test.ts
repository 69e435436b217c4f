import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium, saveScreenshot } from './chromium.ts';
import { type RunningKeyscope, startKeyscope } from './running-keyscope.ts';

/**
 * The API reference at /docs in headless Chromium, against a running keyscope with tokens (the
 * reference needs none): what a developer sees who opens it to write a client.
 */

let keyscope: RunningKeyscope;
let browser: Chromium;

beforeAll(async () => {
  [keyscope, browser] = await Promise.all([startKeyscope({ tokens: true }), launchChromium()]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyscope?.stop();
});

interface OpenApiPaths {
  paths: Record<string, Record<string, { summary: string }>>;
}

describe('the API reference', () => {
  it('renders every operation of the OpenAPI document, loading nothing from another origin and breaking no policy', async () => {
    const document = (await (await fetch(`${keyscope.url}/openapi.json`)).json()) as OpenApiPaths;
    const page = await browser.context.newPage();
    const requests: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requests.push(request.url()));
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
    });
    // Reported by the browser itself for anything the Content-Security-Policy refused.
    await page.addInitScript({
      content:
        "document.addEventListener('securitypolicyviolation', (event) => console.error('csp violation: ' + event.violatedDirective + ' ' + event.blockedURI))",
    });

    const response = await page.goto(`${keyscope.url}/docs`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);

    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => ({
        id: `${method.toUpperCase()} ${path}`,
        operation,
      })),
    );
    expect(operations.length).toBeGreaterThan(10);
    for (const { id, operation } of operations) {
      const section = page.locator(`[data-operation="${id}"]`);
      await expect.poll(() => section.count()).toBe(1);
      expect(await section.locator('h2').textContent()).toBe(id);
      // Code spans of the summary (CommonMark) are shown as code, without their backticks.
      expect(await section.textContent()).toContain(operation.summary.replaceAll('`', ''));
    }
    // The list beside them leads to each one.
    await page
      .getByRole('navigation', { name: 'Operations' })
      .getByRole('link', { name: /\/api\/v1\/scopes/ })
      .click();
    await page.waitForURL(/#get-api-v1-scopes$/);
    expect(await page.locator('[data-operation="GET /api/v1/scopes"]').isVisible()).toBe(true);

    // The stylesheet applied: the method badges have their colours, not the default transparent.
    const badge = await page.evaluate(
      `getComputedStyle(document.querySelector('[data-operation="GET /api/v1/findings"] .method')).backgroundColor`,
    );
    expect(badge).not.toBe('rgba(0, 0, 0, 0)');

    const foreign = requests.filter((url) => !url.startsWith(`${keyscope.url}/`) && !url.startsWith('data:'));
    expect(foreign).toEqual([]);
    expect(requests).toContain(`${keyscope.url}/docs/reference.css`);
    expect(problems).toEqual([]);
    await saveScreenshot(page, 'api-reference');
    await page.close();
  });
});
