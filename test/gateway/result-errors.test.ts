// The errors page lists the result error codes a request's own options can cause (issue 43), each
// with an anchor of its own, beside the HTTP codes.
import t from 'tap';
import { errorsPage } from '../../gateway/pages/errors.ts';

t.test('selector_not_found and credentials_unavailable are on the errors page', async (t) => {
  const page = errorsPage('http://127.0.0.1:1');
  t.match(page, /<h2>Result errors<\/h2>/);
  for (const code of ['selector_not_found', 'credentials_unavailable']) t.match(page, new RegExp(`<tr id="${code}">`), code);
  t.match(page, /<code>targetSelectors<\/code>/, 'the meaning names the options that cause it');
});
