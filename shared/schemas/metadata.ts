// The `metadata` result of websitepro (application/json). One definition: the converter builds it,
// tests validate against it, and /openapi.json can carry it as a component.
import { Type as T, type Static } from '@sinclair/typebox';

const Str = (description: string) => T.Union([T.String(), T.Null()], { description });
const Int = (description: string) => T.Integer({ minimum: 0, description });

export const PageMetadata = T.Object(
  {
    schema: T.Literal('websitepro.metadata/1', { description: 'Identifier and version of this document.' }),
    url: T.String({ description: 'The URL that was requested.' }),
    finalUrl: T.String({ description: 'The URL after redirects (or after client-side navigation when rendered).' }),
    redirects: T.Array(T.String(), { description: 'Every URL requested before the final one, in order.' }),
    status: T.Integer({ description: 'HTTP status of the final response.' }),
    contentType: T.String({ description: 'Media type of the final response, without parameters (e.g. text/html).' }),
    charset: Str('Character encoding the body was decoded with (header, byte-order mark, <meta>, or detected).'),
    bytes: Int('Size of the body after decompression.'),
    rendered: T.Boolean({
      description: 'True when the page needed JavaScript and its DOM was rendered by a real browser before conversion.',
    }),
    title: Str(
      "Title: Readability's (JSON-LD headline, og:title, cleaned <title>), else JSON-LD, Open Graph, Twitter, <title>, the first <h1>.",
    ),
    description: Str(
      "Readability's excerpt (meta descriptions, else the first paragraph), else JSON-LD, og:description, twitter:description, meta description.",
    ),
    language: Str('<html lang>, else JSON-LD inLanguage, og:locale, http-equiv content-language, the Content-Language header.'),
    canonical: Str('<link rel=canonical>, absolute.'),
    author: Str("Readability's byline, else JSON-LD author, article:author, twitter:creator, meta author, rel=author."),
    publishedTime: Str(
      "Readability's published time, else JSON-LD datePublished, article:published_time, meta date, <time datetime> (as published); a PDF's creation date (ISO 8601).",
    ),
    modifiedTime: Str('article:modified_time, JSON-LD dateModified, or og:updated_time.'),
    siteName: Str("Readability's site name, else JSON-LD publisher, og:site_name, application-name."),
    keywords: T.Array(T.String(), { description: 'meta keywords, split on commas.' }),
    robots: Str('meta robots.'),
    favicon: Str('Absolute URL of the best icon link, else /favicon.ico of the final origin.'),
    image: Str('Lead image: og:image, twitter:image, else the first content image; absolute.'),
    openGraph: T.Record(T.String(), T.String(), {
      description: 'Every og:* (and article:*) meta property, without the prefix for og:* (first value wins).',
    }),
    twitter: T.Record(T.String(), T.String(), { description: 'Every twitter:* meta name, without the prefix.' }),
    headings: T.Array(T.Object({ level: T.Integer({ minimum: 1, maximum: 6 }), text: T.String() }), {
      description: 'Outline: h1..h6 of the whole page in document order (at most 200).',
    }),
    links: T.Object({
      total: Int('Links with an http(s) target.'),
      internal: Int('Links to the same host as the final URL.'),
      external: Int('Links to another host.'),
    }),
    images: Int('<img> elements in the page.'),
    wordCount: Int('Words of the main content.'),
    readingTimeMinutes: Int('wordCount / 230, rounded up (0 for no words).'),
    warnings: T.Array(T.String(), {
      description: 'Things that went less well than they could (e.g. a page that needed JavaScript while no browser was available).',
    }),
  },
  { $id: 'PageMetadata', additionalProperties: false },
);

export type PageMetadataDoc = Static<typeof PageMetadata>;
