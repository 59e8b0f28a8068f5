// What convert() takes and gives: the input, the outputs it can make, and how an output is made or fails.

export type TextOutput = 'metadata' | 'markdown' | 'text' | 'html' | 'links' | 'images';

/** What the caller asked to be done to the page's HTML before it is converted (issue 43). */
export interface HtmlControls {
  removeSelectors?: string[];
  targetSelectors?: string[];
  /** Default true (Readability); false: the whole body. Ignored with targetSelectors. */
  mainContent?: boolean;
}

export interface ConvertInput {
  body: Uint8Array;
  /** Full Content-Type header of the final response. */
  contentType: string;
  contentLanguage?: string;
  status: number;
  url: string;
  finalUrl: string;
  redirects: string[];
  rendered: boolean;
  outputs: TextOutput[];
  warnings?: string[];
  /** Ask whether the page needs JavaScript before converting (first pass). */
  detectJs?: boolean;
  controls?: HtmlControls;
}

export type OutputFile = { ok: true; data: string; contentType: string; ext: string };
export type OutputFailure = { ok: false; error: string; message: string };
export type ConvertResult =
  | { needsJavaScript: true; reason: string }
  | {
      needsJavaScript?: false;
      outputs: Partial<Record<TextOutput, OutputFile | OutputFailure>>;
      /** How many elements each selector of the controls matched (absent without controls). */
      selectors?: Record<string, number>;
      /** An HTML page's `<link rel=canonical>`, absolute (absent when it names none). */
      canonical?: string;
    };

export const CONTENT_TYPES: Record<TextOutput, { contentType: string; ext: string }> = {
  metadata: { contentType: 'application/json', ext: 'metadata.json' },
  markdown: { contentType: 'text/markdown; charset=utf-8', ext: 'md' },
  text: { contentType: 'text/plain; charset=utf-8', ext: 'txt' },
  html: { contentType: 'text/html; charset=utf-8', ext: 'html' },
  links: { contentType: 'application/json', ext: 'links.json' },
  images: { contentType: 'application/json', ext: 'images.json' },
};

/** The outputs made of the whole page's elements: only an HTML page has them. */
export const ELEMENT_OUTPUTS = new Set<TextOutput>(['links', 'images']);

export const selectorNotFound = (selector: string): OutputFailure => ({
  ok: false,
  error: 'selector_not_found',
  message: `the selector ${JSON.stringify(selector)} matches nothing on the page`,
});

export const file = (o: TextOutput, data: string): OutputFile => ({ ok: true, data, ...CONTENT_TYPES[o] });
export const unsupported = (what: string, o: TextOutput): OutputFailure => ({
  ok: false,
  error: 'unsupported_content',
  message: `a ${what} target has no ${o}`,
});
export const failure = (e: unknown, what: string): OutputFailure => ({
  ok: false,
  error: 'conversion_failed',
  message: `${what}: ${((e as Error)?.message ?? String(e)).split('\n')[0]}`,
});
