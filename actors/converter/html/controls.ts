// The caller's selectors applied to a parsed page (issue 43): `removeSelectors` take elements out
// first, `targetSelectors` then pick what is converted. Each selector's match count is kept for the
// result's `extra.selectors`; a target that matches nothing is the caller's to know, never silent.
import { documentOrder } from '../links.ts';

export type Counts = Record<string, number>;

/** Remove every element each selector matches; counts what each matched (a selector may match nothing). */
export function removeSelected(doc: Document, selectors: string[], counts: Counts): number {
  let removed = 0;
  for (const s of selectors) {
    const found = Array.from(doc.querySelectorAll(s));
    counts[s] = (counts[s] ?? 0) + found.length;
    for (const el of found) {
      el.remove();
      removed++;
    }
  }
  return removed;
}

/**
 * What the target selectors match, in document order, each element once and none inside another
 * (its ancestor carries it), moved into one container of the page's document: the content to convert.
 * `missing`: the first selector that matched nothing (the result then fails as selector_not_found).
 */
export function selectTargets(doc: Document, selectors: string[], counts: Counts): { root: Element; missing: string | null } {
  const picked = new Set<Element>();
  let missing: string | null = null;
  for (const s of selectors) {
    const found = Array.from(doc.querySelectorAll(s));
    counts[s] = found.length;
    if (!found.length) missing ??= s;
    for (const el of found) picked.add(el);
  }
  const ordered = [...picked].sort(documentOrder);
  const root = doc.createElement('div');
  let last: Element | null = null;
  for (const el of ordered) {
    if (last?.contains(el)) continue; // inside one already taken
    root.appendChild(el);
    last = el;
  }
  return { root, missing };
}
