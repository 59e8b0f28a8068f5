// Element walks in place of selector lists. jsdom gives every document its own nwsapi instance,
// so each selector is parsed and compiled again for every page, and each query is a walk of its
// own over the whole tree: the selector lists of the page steps were a fifth of a conversion
// (docs/performance.md). One walk after the parse sorts the elements by name; the steps read the
// lists they need, and the matching rules below are the selectors' own (kept beside each use).

/** ASCII-only lower case: what the ` i` flag of an attribute selector compares by. */
export const asciiLower = (s: string) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

/** Attribute value equal to `want` (lower case) ignoring ASCII case: `[name="want" i]`. */
export const attrIs = (el: Element, name: string, want: string) => {
  const v = el.getAttribute(name);
  return v !== null && v.length === want.length && asciiLower(v) === want;
};

/** Class names are matched case-insensitively in quirks mode, as nwsapi (and browsers) do; a class
 *  list splits on ASCII whitespace only (a no-break space is part of a name). */
export const classPattern = (doc: Document, names: string[]) =>
  new RegExp(`(^|[\\t\\n\\f\\r ])(${names.join('|')})([\\t\\n\\f\\r ]|$)`, doc.compatMode === 'BackCompat' ? 'i' : '');

export interface PageIndex {
  /** Elements by local name, in document order, as the parse left them. */
  byName: Map<string, Element[]>;
  /** h1…h6 in document order. */
  headings: Element[];
}

const HEADINGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);

/** One walk over the document's elements (the root included). */
export function indexPage(doc: Document): PageIndex {
  const byName = new Map<string, Element[]>();
  const headings: Element[] = [];
  const root = doc.documentElement;
  if (!root) return { byName, headings };
  // iterative pre-order walk: document order, no recursion depth limit
  let el: Element | null = root;
  while (el) {
    const name = el.localName;
    let list = byName.get(name);
    if (!list) byName.set(name, (list = []));
    list.push(el);
    if (HEADINGS.has(name)) headings.push(el);
    el = nextInside(el, root);
  }
  return { byName, headings };
}

/** The element after `el` in document order, staying inside `root` (null past its end). */
function nextInside(el: Element, root: Element): Element | null {
  if (el.firstElementChild) return el.firstElementChild;
  let up: Element | null = el;
  while (up && up !== root && !up.nextElementSibling) up = up.parentElement;
  return up && up !== root ? up.nextElementSibling : null;
}

export const named = (idx: PageIndex, name: string): Element[] => idx.byName.get(name) ?? [];

/** First descendant of `root` (not `root` itself) for which `pred` holds, in document order. */
export function firstDescendant(root: Element, pred: (el: Element) => boolean): Element | null {
  let el: Element | null = root.firstElementChild;
  while (el) {
    if (pred(el)) return el;
    el = nextInside(el, root);
  }
  return null;
}

/** `root` or its first descendant for which `pred` holds: `root.ownerDocument.querySelector(…)` from the root element. */
export const firstElement = (root: Element, pred: (el: Element) => boolean): Element | null =>
  pred(root) ? root : firstDescendant(root, pred);

/** Whether `root` has a descendant whose local name is in `names`: `root.querySelector('a, b') !== null`. */
export const hasDescendantNamed = (root: Element, names: ReadonlySet<string>) =>
  firstDescendant(root, (e) => names.has(e.localName)) !== null;

/** Whether an ancestor (not the element itself) has one of the local names. */
export function hasAncestorNamed(el: Element, names: ReadonlySet<string>): boolean {
  for (let p = el.parentElement; p; p = p.parentElement) if (names.has(p.localName)) return true;
  return false;
}
