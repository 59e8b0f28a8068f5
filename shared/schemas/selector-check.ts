// A CSS selector's syntax, checked before any charge (a 400 bad_request naming the field). The
// check is jsdom's selector engine on an empty document, loaded on first use: a selector it refuses
// is refused by browsers too (namespace selectors aside, which no page-control needs).
import { ApiError } from '../errors.ts';

let doc: Promise<{ querySelectorAll(s: string): unknown }> | undefined;
const emptyDocument = () => (doc ??= import('jsdom').then(({ JSDOM }) => new JSDOM('').window.document));

/** Throws ApiError('bad_request') for the first selector that is not valid CSS, naming its field. */
export async function checkSelectors(list: { field: string; selector: string }[]): Promise<void> {
  if (!list.length) return;
  const d = await emptyDocument();
  for (const { field, selector } of list) {
    try {
      d.querySelectorAll(selector);
    } catch {
      throw new ApiError('bad_request', `${field}: ${JSON.stringify(selector)} is not a valid CSS selector`, { field, selector });
    }
  }
}
