/**
 * Builds DOM from data without ever parsing markup: every string child becomes a text node and
 * every attribute goes through setAttribute, so span values (keys, service names, store ids) stay
 * text whatever they contain. Event-handler attributes are refused outright; links go through
 * `pageHref`/`externalHref`, which only produce URLs of this page or http(s).
 */

/**
 * A list of children is a child too: pass a list built from spans (`rows.map(…)`) as one, never
 * spread into the call, since a call takes at most ~100,000 arguments and throws "Maximum call
 * stack size exceeded" past them.
 */
export type Child = Node | string | number | null | undefined | false | readonly Child[];
export type AttributeValue = string | number | boolean | null | undefined;
export type Attributes = Record<string, AttributeValue>;

const SVG_NS = 'http://www.w3.org/2000/svg';

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  setAttributes(element, attributes);
  appendChildren(element, children);
  return element;
}

export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG_NS, tag);
  setAttributes(element, attributes);
  appendChildren(element, children);
  return element;
}

/**
 * `parent` with `children` appended, for a list of any length: spread into `el(…, ...list)` a list
 * of a few hundred thousand items (stores of a span-derived list) overflows the call stack.
 */
export function withChildren<E extends Node>(parent: E, children: Iterable<Child>): E {
  appendChildren(parent, children);
  return parent;
}

export function appendChildren(parent: Node, children: Iterable<Child>): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) appendChildren(parent, child);
    else
      parent.appendChild(
        typeof child === 'object' ? (child as Node) : document.createTextNode(String(child)),
      );
  }
}

/** Empties `parent` and fills it with `children`. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  appendChildren(parent, children);
}

function setAttributes(element: Element, attributes: Attributes): void {
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (/^on/i.test(name)) throw new Error(`refusing event-handler attribute ${name}`);
    if ((name === 'href' || name === 'src') && !isSafeUrl(String(value))) {
      throw new Error(`refusing ${name} that is neither this page's path nor http(s)`);
    }
    element.setAttribute(name, value === true ? '' : String(value));
  }
}

function isSafeUrl(value: string): boolean {
  return /^\/(?!\/)/.test(value) || value.startsWith('#') || /^https?:\/\//i.test(value);
}

/** A path of this page with each segment percent-encoded: `/keys/a%2Fb`. */
export function pageHref(...segments: string[]): string {
  return `/${segments.map(encodeURIComponent).join('/')}`;
}

/**
 * The page of one key, whatever it holds: `/keys/<key percent-encoded>`, except `.` and `..`, which
 * URLs resolve as path steps even encoded, and which go in the query instead.
 */
export function keyHref(key: string): string {
  return key === '.' || key === '..' ? `/keys?${new URLSearchParams({ key })}` : pageHref('keys', key);
}
