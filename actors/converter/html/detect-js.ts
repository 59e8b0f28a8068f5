// Whether a page's static HTML is an application shell that needs a browser (docs/websitepro.md).

/**
 * A page needs JavaScript when its static HTML carries (almost) no readable text but does carry
 * scripts: the client-rendered shell of React, Vue, Angular, Next, Nuxt, Svelte and the like.
 * Returns the reason, or null. Documented in docs/websitepro.md.
 */
export function needsJavaScript(doc: Document): string | null {
  const body = doc.body;
  if (!body) return null;
  const text = visibleText(body, 200);
  // a page with text is converted as it is, whatever its scripts do later
  if (text.length >= 200) return null;
  const scripts = doc.querySelectorAll('script[src], script:not([type]), script[type="module"], script[type="text/javascript"]').length;
  if (!scripts) return null;
  const mount = body.querySelector(
    '#root, #app, #__next, #__nuxt, #svelte, [data-reactroot], [ng-version], app-root, [data-server-rendered]',
  );
  const mountEmpty = mount ? (mount.textContent ?? '').trim().length < 20 : false;
  const noscriptAsks = [...doc.querySelectorAll('noscript')].some((n) =>
    /enable javascript|requires javascript|javascript (is )?(required|disabled)/i.test(n.textContent ?? ''),
  );
  if (text.length < 200 && (mountEmpty || noscriptAsks))
    return `static HTML has ${text.length} characters of text and an empty application mount point`;
  if (text.length < 40) return `static HTML has ${text.length} characters of text and ${scripts} scripts`;
  return null;
}

const INVISIBLE = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'svg']);
/** Whitespace-collapsed text outside scripts, styles and the like; stops once past `enough` characters. */
function visibleText(root: Element, enough: number): string {
  let text = '';
  const walk = (n: Node): boolean => {
    for (let c = n.firstChild; c; c = c.nextSibling) {
      if (c.nodeType === 3) {
        text += c.nodeValue;
        if (text.length > enough * 4 && text.replace(/\s+/g, ' ').trim().length > enough) return true;
      } else if (c.nodeType === 1 && !INVISIBLE.has((c as Element).tagName) && walk(c)) return true;
    }
    return false;
  };
  walk(root);
  return text.replace(/\s+/g, ' ').trim();
}
