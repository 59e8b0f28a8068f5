// An HTML page → its outputs: one parse, then every output on its own.
import { decodeBody } from '../charset.ts';
import { capNesting, MAX_DEPTH } from '../depth.ts';
import {
  file,
  failure,
  selectorNotFound,
  type ConvertInput,
  type ConvertResult,
  type OutputFailure,
  type OutputFile,
  type TextOutput,
} from '../types.ts';
import { parseHtml, releaseSelectorEngines, type ParsedPage } from './parse.ts';
import { needsJavaScript } from './detect-js.ts';
import { prepareDoc } from './prepare.ts';
import { removeDebris } from './debris.ts';
import { basicFacts, buildMetadata, canonicalOf, collectPageFacts } from './facts.ts';
import { dropTitleHeading, mainContent, prepare, type MainContent } from './content.ts';
import { removeSelected, selectTargets, type Counts } from './controls.ts';
import { indexPage } from '../elements.ts';
import { extractImages, extractLinks } from '../links.ts';
import { sanitize, toMarkdown, toText } from './outputs.ts';

/**
 * One parse, then every output on its own: a step that throws costs only the outputs that need it.
 * Metadata needs nothing but the parsed page (page facts, and Readability's metadata when it runs),
 * so it comes out of any HTML that parses.
 */
export function convertHtml(input: ConvertInput, mt: string): ConvertResult {
  const { text: decoded, charset } = decodeBody(input.body, input.contentType);
  const want = new Set(input.outputs);
  const out: Partial<Record<TextOutput, OutputFile | OutputFailure>> = {};
  const failAll = (f: OutputFailure) => {
    for (const o of want) out[o] ??= f;
  };
  const warnings = [...(input.warnings ?? [])];
  let source = decoded;
  const parse = () => parseHtml(source, input.finalUrl);
  let selectors: Counts | undefined;
  let canonical: string | undefined;
  const done = (): ConvertResult => ({ outputs: out, ...(selectors ? { selectors } : {}), ...(canonical ? { canonical } : {}) });
  try {
    let doc: Document;
    let page: ParsedPage;
    try {
      const capped = capNesting(decoded);
      source = capped.html;
      if (capped.flattened)
        warnings.push(
          `the page nests elements deeper than ${MAX_DEPTH} levels; the deeper ones were flattened (kept in order at level ${MAX_DEPTH})`,
        );
      page = parse();
      doc = page.doc;
    } catch (e) {
      failAll(failure(e, 'the page does not parse as HTML'));
      return { outputs: out };
    }
    // the page's own canonical URL (a crawl folds copies by it), read before anything is removed
    canonical = guard(() => canonicalOf(page) ?? undefined, undefined);
    if (input.detectJs && !input.rendered) {
      const why = guard(() => needsJavaScript(doc), null);
      if (why) return { needsJavaScript: true, reason: why };
    }
    const controls = input.controls ?? {};
    const counts: Counts = {};
    if (controls.removeSelectors?.length) {
      // the caller's removals come first, for every output (links and images included); the
      // page's element lists are taken again without what went
      if (removeSelected(doc, controls.removeSelectors, counts)) page = { ...indexPage(doc), doc, base: page.base };
    }
    const keep = guard(
      () => prepareDoc(page),
      [] as string[],
      (e) => warnings.push(`links and code blocks were not prepared: ${(e as Error).message}`),
    );
    // the whole page's links and images, before any content is chosen (prepareDoc made them absolute)
    for (const o of ['links', 'images'] as const) {
      if (!want.has(o)) continue;
      try {
        const list = o === 'links' ? extractLinks(doc, doc.baseURI, input.finalUrl) : extractImages(doc, doc.baseURI, input.finalUrl);
        out[o] = file(o, JSON.stringify(list, null, 2));
      } catch (e) {
        out[o] = failure(e, o);
      }
    }
    const facts =
      guard(
        () => collectPageFacts(page, input),
        null,
        (e) => warnings.push(`page facts failed: ${(e as Error).message}`),
      ) ?? basicFacts(doc, input);
    let main: MainContent | null = null;
    let mainError: unknown = null;
    let missing: string | null = null;
    if (controls.targetSelectors?.length) {
      // the selected parts are the content: no Readability, no furniture removal
      try {
        const picked = selectTargets(doc, controls.targetSelectors, counts);
        missing = picked.missing;
        main = chosenContent(picked.root, facts);
      } catch (e) {
        mainError = e;
      }
    } else if (controls.mainContent === false) {
      main = chosenContent(doc.body ?? doc.createElement('body'), facts);
    } else {
      guard(() => removeDebris(doc), undefined);
      // Readability changes the document it reads; the page facts are taken first, and the rare
      // fallback (no article found) parses the page again instead of every page paying for a copy
      try {
        main = mainContent(doc, keep, () => {
          const d = parse();
          if (controls.removeSelectors?.length) removeSelected(d.doc, controls.removeSelectors, {});
          guard(() => prepareDoc(d), []);
          guard(() => removeDebris(d.doc), undefined);
          return d.doc;
        });
      } catch (e) {
        mainError = e;
      }
    }
    if (input.controls && (controls.removeSelectors?.length || controls.targetSelectors?.length)) selectors = counts;
    const title = main?.title ?? facts.title;
    if (want.has('metadata')) {
      try {
        out.metadata = file('metadata', JSON.stringify(buildMetadata({ ...input, warnings }, mt, charset, facts, main), null, 2));
      } catch (e) {
        out.metadata = failure(e, 'metadata');
      }
    }
    if (missing) {
      failAll(selectorNotFound(missing));
      return done();
    }
    if (!main) {
      failAll(failure(mainError, 'main content'));
      return done();
    }
    let root: Element;
    try {
      root = prepare(main.root);
      dropTitleHeading(root, title);
    } catch (e) {
      failAll(failure(e, 'content clean-up'));
      return done();
    }
    const each: [TextOutput, () => string][] = [
      ['markdown', () => toMarkdown(root, title)],
      ['text', () => toText(root, title)],
      ['html', () => sanitize(root, title, main.lang ?? facts.language)],
    ];
    for (const [o, make] of each) {
      if (!want.has(o)) continue;
      try {
        out[o] = file(o, make());
      } catch (e) {
        out[o] = failure(e, o);
      }
    }
    return done();
  } finally {
    // documents of the shared window are garbage once unreferenced, and the shared selector
    // engines' resolvers reference the last ones they ran on
    releaseSelectorEngines();
  }
}

/** The caller's choice of content (targetSelectors, or the whole body): the page's own facts name it. */
function chosenContent(root: Element, facts: { title: string | null; language?: string | null }): MainContent {
  return {
    root,
    fromReadability: false,
    byline: null,
    siteName: null,
    excerpt: null,
    publishedTime: null,
    title: facts.title,
    lang: facts.language ?? null,
  };
}

/** Run a step that may fail without failing the outputs that do not need it. */
function guard<T>(fn: () => T, fallback: T, onError?: (e: unknown) => void): T {
  try {
    return fn();
  } catch (e) {
    onError?.(e);
    return fallback;
  }
}
