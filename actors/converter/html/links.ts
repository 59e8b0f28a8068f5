// Every link and image made absolute against the page's base before Readability moves them around.
import { named } from '../elements.ts';
import { WINDOW_URL, type ParsedPage } from './parse.ts';

/** Every link and image absolute against the document base (jsdom honours <base>); lazy images made real. */
export function absolutize(page: ParsedPage) {
  const { doc, base } = page;
  // a <base> pointing anywhere but http(s) would turn every relative link into that scheme
  // (parseHtml left one <base> only; its href is read against the window's URL, as jsdom does)
  let ok = false;
  try {
    ok = /^https?:$/.test(new URL(base.getAttribute('href') ?? '', WINDOW_URL).protocol);
  } catch {
    ok = false;
  }
  if (!ok) base.remove();
  // what `a.href` gives, with Node's URL parser: jsdom's (whatwg-url, IDNA in JavaScript) cost
  // more than the rest of this step; an unparsable href stays as written, as jsdom returns it
  const baseUrl = doc.baseURI;
  for (const a of named(page, 'a')) {
    const raw = a.getAttribute('href');
    if (raw === null) continue;
    const href = raw.trim();
    if (/^javascript:/i.test(href)) a.removeAttribute('href');
    else if (!href.startsWith('#')) a.setAttribute('href', resolveHref(raw, baseUrl));
  }
  for (const img of named(page, 'img')) {
    const lazy = img.getAttribute('data-src') ?? img.getAttribute('data-lazy-src') ?? img.getAttribute('data-original');
    const src = img.getAttribute('src') ?? '';
    if (lazy && (!src || src.startsWith('data:'))) img.setAttribute('src', lazy);
    const s = img.getAttribute('src');
    if (s && !s.startsWith('data:')) {
      try {
        img.setAttribute('src', new URL(s, doc.baseURI).href);
      } catch {
        img.removeAttribute('src');
      }
    }
    img.removeAttribute('srcset');
  }
  for (const el of named(page, 'source')) if (el.hasAttribute('srcset')) el.removeAttribute('srcset');
}

function resolveHref(raw: string, base: string): string {
  try {
    return new URL(raw, base).href;
  } catch {
    return raw;
  }
}
