// The metadata document's frame (every field, empty) and the word counts every kind of target uses.
import type { ConvertInput } from './types.ts';
import type { PageMetadataDoc } from '../../shared/schemas/metadata.ts';

/** Whitespace collapsed and trimmed; null when nothing is left. */
export const clean = (s: string | null | undefined) => {
  const v = (s ?? '').replace(/\s+/g, ' ').trim();
  return v ? v : null;
};

export function countWords(s: string): number {
  const m = s.match(/[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu);
  return m ? m.length : 0;
}
export const readingTime = (words: number) => (words ? Math.ceil(words / 230) : 0);

export function emptyMetadata(input: ConvertInput, mt: string, charset: string | null): PageMetadataDoc {
  return {
    schema: 'websitepro.metadata/1',
    url: input.url,
    finalUrl: input.finalUrl,
    redirects: input.redirects,
    status: input.status,
    contentType: mt,
    charset,
    bytes: input.body.length,
    rendered: input.rendered,
    title: null,
    description: null,
    language: null,
    canonical: null,
    author: null,
    publishedTime: null,
    modifiedTime: null,
    siteName: null,
    keywords: [],
    robots: null,
    favicon: null,
    image: null,
    openGraph: {},
    twitter: {},
    headings: [],
    links: { total: 0, internal: 0, external: 0 },
    images: 0,
    wordCount: 0,
    readingTimeMinutes: 0,
    warnings: [...(input.warnings ?? [])],
  };
}
