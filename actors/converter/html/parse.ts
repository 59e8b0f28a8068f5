// HTML → a document of the thread's one jsdom window, with the page's base URL set and its
// elements listed by name; every document shares the thread's selector engine (html/internals/jsdom.ts).
import { JSDOM, type DOMWindow } from 'jsdom';
import { indexPage, named, type PageIndex } from '../elements.ts';
import { clearResolvers, engineSlot, type SelectorEngine } from './internals/jsdom.ts';

/**
 * One jsdom window per thread, and every page parsed into a new document of it with DOMParser:
 * making a window costs about as much as parsing a page (docs/performance.md). The document's own
 * URL is the window's, so the page's base URL is set with a <base>: the page's first <base href>
 * made absolute against the final URL (dropped when it is not http(s)), else the final URL.
 */
let sharedWindow: DOMWindow | null = null;
export const WINDOW_URL = 'https://converter.invalid/';

/** A parsed page: the document, its elements sorted by name (one walk), and the <base> put in. */
export interface ParsedPage extends PageIndex {
  doc: Document;
  base: HTMLBaseElement;
}

export function parseHtml(source: string, url: string): ParsedPage {
  sharedWindow ??= new JSDOM('', { url: WINDOW_URL }).window;
  const doc = new sharedWindow.DOMParser().parseFromString(source, 'text/html') as unknown as Document;
  shareSelectorEngine(doc);
  const index = indexPage(doc);
  const allBases = named(index, 'base');
  const bases = allBases.filter((b) => b.hasAttribute('href'));
  let base: string = url;
  if (bases[0]) {
    try {
      const b = new URL(bases[0].getAttribute('href')!.trim(), url);
      if (b.protocol === 'http:' || b.protocol === 'https:') base = b.href;
    } catch {
      /* an unparsable <base> is ignored, as browsers do */
    }
  }
  for (const b of allBases) b.remove();
  const el = doc.createElement('base');
  el.setAttribute('href', base);
  (doc.head ?? doc.documentElement).prepend(el);
  return { ...index, doc, base: el };
}

/** The thread's window (made by the first parse): the DOM the HTML sanitiser runs on. */
export const threadWindow = () => sharedWindow;

/**
 * jsdom gives every document a selector engine (nwsapi) of its own on its first query, and the
 * engine compiles each selector again: Readability's queries and jsdom's own `<base>` lookup cost
 * an engine and their compiles on every page. nwsapi follows the document of the node it is asked
 * about, so one engine per thread serves every page; one per compatibility mode, since nwsapi
 * compiles quirks mode into class selectors. If jsdom stops keeping the engine where it is looked
 * for, every document simply makes its own again.
 */
/** Per compatibility mode: the engine and the tiny document it was made on. */
const selectorEngines = new Map<string, { engine: SelectorEngine; seed: Document }>();
function shareSelectorEngine(doc: Document) {
  const slot = engineSlot(doc);
  if (!slot) return;
  const engine = selectorEngineFor(doc.compatMode);
  if (!engine) return;
  releaseSelectorEngines();
  slot.adopt(engine);
}

/**
 * Drops the shared engines' resolvers, which hold, per selector, the page it last ran on and the
 * nodes found there: a big page stayed alive for good through a selector no later page asked (a
 * worker held ~1 GB after one 2 MB page). A resolver is made again for every new document anyway;
 * the compiled selectors, the part worth sharing, are cached apart and stay.
 */
export function releaseSelectorEngines() {
  for (const { engine, seed } of selectorEngines.values()) {
    seed.querySelector('p'); // the last document it ran on (kept until its next query) is its own
    clearResolvers(engine);
  }
}

/**
 * The thread's engine for a compatibility mode, made on a tiny document of our own: an engine
 * keeps the document it was made for as long as it lives, which must not be a page.
 */
function selectorEngineFor(mode: string): SelectorEngine | undefined {
  const known = selectorEngines.get(mode);
  if (known) return known.engine;
  const seed = new sharedWindow!.DOMParser().parseFromString(
    mode === 'BackCompat' ? '<p>' : '<!doctype html><p>',
    'text/html',
  ) as unknown as Document;
  if (seed.compatMode !== mode) return undefined; // a mode this cannot make: the page keeps its own engine
  seed.querySelector('base[href]'); // jsdom makes the document's engine on first use
  const engine = engineSlot(seed)?.engine();
  if (engine) selectorEngines.set(mode, { engine, seed });
  return engine;
}
