// jsdom's internals, the only place they are touched: where jsdom keeps a document's selector
// engine (nwsapi, made on the document's first query) and nwsapi's resolver caches. Used by
// html/parse.ts to share one engine per thread. Pinned by test/converter/internals.test.ts, which
// fails with the reason the day a jsdom or nwsapi upgrade moves them; until then nothing breaks
// here, the sharing just stops (every document makes its own engine, as jsdom does by default).
import { createRequire } from 'node:module';

/** nwsapi's resolver caches: per selector, the node it last ran from and what it found. */
export interface SelectorEngine {
  selectResolvers?: { clear(): void };
  matchResolvers?: { clear(): void };
}

type Impl = { _nwsapi?: SelectorEngine };
/** jsdom's wrapper → implementation map; null when the file is gone (the sharing is then off). */
export const JSDOM_UTILS = 'jsdom/lib/jsdom/living/generated/utils.js';
const utils = (() => {
  try {
    return createRequire(import.meta.url)(JSDOM_UTILS) as { implForWrapper(w: object): Impl | null };
  } catch {
    return null;
  }
})();

/** A document's engine slot: the engine it has, and giving it one (kept if it has its own already). */
export function engineSlot(doc: Document): { engine(): SelectorEngine | undefined; adopt(e: SelectorEngine): void } | null {
  const impl = utils?.implForWrapper(doc);
  if (!impl) return null;
  return {
    engine: () => impl._nwsapi,
    adopt: (e) => {
      impl._nwsapi ??= e;
    },
  };
}

/** Drop an engine's resolvers (they hold the last page each selector ran on); compiled selectors stay. */
export function clearResolvers(engine: SelectorEngine) {
  engine.selectResolvers?.clear();
  engine.matchResolvers?.clear();
}
