// Page furniture removed before Readability reads the page: cookie and consent boxes, ads, edit
// links, heading permalinks.
import { classPattern, hasDescendantNamed } from '../elements.ts';

// Furniture told by id or class: cookie and consent boxes, advertising slots, paywall and meter
// messages, "was this helpful" / "report a problem" boxes
const FURNITURE_NAME = /cookie|consent|gdpr|advert|ad-slot|ad-container|ad-unit|adsbygoogle|google_ads|paywall|meter-|feedback/i;
const SKIP_LINKS = new Set(['#content', '#main', '#main-content']);

/** Cookie banners, consent walls, ads, "[edit]" links, heading permalinks: page furniture, never content. */
export function removeDebris(doc: Document) {
  // one walk over the elements for every rule: a selector list of case-insensitive substring
  // matches cost nwsapi ten times as much, and each list is a walk of its own (docs/performance.md)
  const doomed: Element[] = [];
  // `.mw-editsection, .editsection, .edit-link, .post-edit-link, a.headerlink, a.anchor,
  // a.anchorjs-link, a.heading-anchor, a.hash-link, a[href*="action=edit"]`
  const editLinks: Element[] = [];
  // `h1 a[href^="#"]` … `h6 a[href^="#"]`
  const permalinks: Element[] = [];
  // `:is(h1, h2, h3, h4, h5, h6) :is(a, span, button)`
  const inHeading: Element[] = [];
  const editClass = classPattern(doc, ['mw-editsection', 'editsection', 'edit-link', 'post-edit-link']);
  const anchorClass = classPattern(doc, ['headerlink', 'anchor', 'anchorjs-link', 'heading-anchor', 'hash-link']);
  const walk = (parent: Element, heading: boolean) => {
    for (let el = parent.firstElementChild; el; el = el.nextElementSibling) {
      const cls = el.getAttribute('class');
      const name = `${el.id} ${cls ?? ''}`;
      const role = el.getAttribute('role');
      const tag = el.localName;
      const furniture =
        FURNITURE_NAME.test(name) ||
        el.hasAttribute('data-ad-slot') ||
        role === 'dialog' ||
        role === 'alertdialog' ||
        el.getAttribute('aria-modal') === 'true' ||
        (el.tagName === 'A' && (/(^|\s)skip-link(\s|$)/.test(name) || SKIP_LINKS.has(el.getAttribute('href') ?? '')));
      // a class name is a weak signal: only small boxes go, so an article about cookies stays
      if (
        furniture &&
        el.tagName !== 'BODY' &&
        el.tagName !== 'HEAD' &&
        (el.textContent ?? '').length < 1500 &&
        !hasDescendantNamed(el, HOLDS_CONTENT)
      ) {
        doomed.push(el);
        continue;
      }
      if (cls !== null && editClass.test(cls)) editLinks.push(el);
      else if (tag === 'a' && ((cls !== null && anchorClass.test(cls)) || (el.getAttribute('href') ?? '').includes('action=edit')))
        editLinks.push(el);
      if (heading) {
        if (tag === 'a' && el.getAttribute('href')?.startsWith('#')) permalinks.push(el);
        if (tag === 'a' || tag === 'span' || tag === 'button') inHeading.push(el);
      }
      walk(el, heading || HEADING_NAMES.has(tag));
    }
  };
  if (doc.documentElement) walk(doc.documentElement, false);
  for (const el of doomed) el.remove();
  // in the order the selector lists ran: what an earlier rule removed is gone for the later ones
  for (const el of editLinks) el.remove();
  for (const a of permalinks) {
    if (a.isConnected && /^[\s#¶§🔗]*$/u.test(a.textContent ?? '')) a.remove();
  }
  for (const el of inHeading) {
    if (el.isConnected && /^\s*\[?\s*(edit|edit source|bearbeiten|modifier|править)\s*\]?\s*$/i.test(el.textContent ?? '')) el.remove();
  }
}
const HOLDS_CONTENT = new Set(['article', 'main', 'h1']);
const HEADING_NAMES = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);
