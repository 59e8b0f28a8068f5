// The front door (`/`): a browser (Accept names text/html and not application/json, the rule of the
// labs report page) gets a small page (gateway/pages/home.ts); an API client (curl's `*/*`, a
// client asking for JSON, no Accept) gets the `/v1` index as JSON, so `/` is never a 404.
import type { GatewayContext, Reply, Route } from '../route.ts';
import { homePage, HOME_CSP } from '../pages/home.ts';
import { apiIndex, pricing } from './public.ts';

/** A client that asks for HTML and not JSON: a browser. */
export function wantsHtml(accept: string | undefined): boolean {
  const a = (accept ?? '').toLowerCase();
  return a.includes('text/html') && !a.includes('application/json');
}

const pages = new WeakMap<GatewayContext, string>();

export const homeRoute: Route = {
  method: 'GET',
  path: '/',
  auth: false,
  hidden: true,
  tags: ['public'],
  summary: 'Front door: a page for browsers, the /v1 index for API clients',
  errors: [],
  responses: { 200: { description: 'HTML to a browser (Accept: text/html), else the /v1 index as JSON' } },
  handler: async (req, ctx): Promise<Reply> => {
    if (!wantsHtml(req.headers.accept)) return { json: apiIndex(ctx), headers: { vary: 'Accept' } };
    let body = pages.get(ctx);
    if (!body) pages.set(ctx, (body = homePage(ctx.baseUrl, pricing(ctx.config))));
    return {
      body,
      headers: {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': HOME_CSP,
        'x-content-type-options': 'nosniff',
        'cache-control': 'public, max-age=300',
        vary: 'Accept',
      },
    };
  },
};
