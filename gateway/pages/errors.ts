import { ERRORS, ERROR_CODES } from '../../shared/errors.ts';
import { RESULT_ERRORS } from '../../shared/result-errors.ts';

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
const md = (s: string) => esc(s).replace(/`([^`]+)`/g, '<code>$1</code>');

/** The errors reference: every code with its status, meaning and what to do; one anchor per code. */
export function errorsPage(baseUrl: string): string {
  const rows = ERROR_CODES.map((code) => {
    const d = ERRORS[code];
    return `<tr id="${code}"><td><a href="#${code}"><code>${code}</code></a></td><td>${d.status}</td><td>${md(d.meaning)}</td><td>${md(d.action)}</td><td>${d.retryable ? 'yes' : 'no'}</td></tr>`;
  }).join('\n');
  const resultRows = Object.entries(RESULT_ERRORS)
    .map(
      ([code, d]) =>
        `<tr id="result-${code}"><td><a href="#result-${code}"><code>${code}</code></a></td><td>${esc(d.services.join(', '))}</td><td>${md(d.meaning)}</td><td>${md(d.action)}</td></tr>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Errors · Payloads API</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:1rem;color:#1b1b1b;background:#fff}
@media (prefers-color-scheme: dark){body{background:#111;color:#eee}a{color:#8ab4ff}tr:target{background:#333!important}}
table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:.5rem;border-bottom:1px solid #8884}
tr:target{background:#fff3bf}code{font-size:.95em}
</style></head><body>
<nav><a href="/">Payloads</a> · <a href="/docs">API reference</a> · <a href="/account">Account</a></nav>
<h1>Errors</h1>
<p>Every error answers with its HTTP status and the body <code>{"error": {"code", "message", "docs", "requestId", ...}}</code>.
Branch on <code>code</code>; <code>message</code> is for people and may change. Nothing is charged for a request that fails with a 4xx or 503;
if anything fails after a job was charged, the charge is refunded before the answer. API root: <a href="${esc(baseUrl)}/v1">${esc(baseUrl)}/v1</a>.</p>
<table><thead><tr><th>Code</th><th>Status</th><th>Meaning</th><th>What to do</th><th>Retry helps</th></tr></thead>
<tbody>
${rows}
</tbody></table>
<h2 id="result-errors">Result errors</h2>
<p>A job that was created can still fail result by result: a failed result carries <code>error</code> (and
<code>message</code>) and is refunded. These are the codes a result's <code>error</code> may carry:</p>
<table><thead><tr><th>Code</th><th>Services</th><th>Meaning</th><th>What to do</th></tr></thead>
<tbody>
${resultRows}
</tbody></table>
</body></html>`;
}
