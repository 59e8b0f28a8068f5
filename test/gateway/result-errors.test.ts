// The errors page lists every result error code (a failed result's `error`, issues 42 and 43), each
// with an anchor of its own (`#result-<code>`, apart from the HTTP codes' anchors), beside the HTTP codes.
import t from 'tap';
import { errorsPage } from '../../gateway/pages/errors.ts';
import { RESULT_ERRORS } from '../../shared/result-errors.ts';

t.test('every result error is on the errors page with its own anchor', async (t) => {
  const page = errorsPage('http://127.0.0.1:1');
  t.match(page, /<h2 id="result-errors">Result errors<\/h2>/);
  for (const code of ['selector_not_found', 'credentials_unavailable', 'blocked', 'login_required']) t.ok(RESULT_ERRORS[code], code);
  for (const code of Object.keys(RESULT_ERRORS)) t.match(page, new RegExp(`<tr id="result-${code}">`), code);
  t.match(page, /<code>targetSelectors<\/code>/, 'the meaning names the options that cause it');
  const ids = [...page.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]);
  t.same(ids.length, new Set(ids).size, 'no anchor twice (unreachable, timeout and blocked_address are HTTP codes too)');
});
