// The HTML view of a labs report: rendered from the same labs.report/1 JSON, checks grouped by NIP
// with the quote that decided each level, a latency chart, and nothing the relay sends can run.
import t from 'tap';
import { startTestRelay, defaultInfo } from './fixtures/relay.ts';
import { startMiniRelay } from './fixtures/mini-relay.ts';
import { probe } from './fixtures/probe.ts';
import { renderLabsReportHtml, wantsReportHtml, reportPageReply } from '../../gateway/jobs/labs-report-html.ts';

t.test('a report as a page: summary, score, checks by NIP with quotes, latency chart, claims table', async (t) => {
  const relay = await startMiniRelay({ keepEphemeralMs: 60_000 });
  t.teardown(() => relay.close());
  const { report } = await probe(relay.url, 'custom', ['dns', 'websocket', 'latency', 'kind-ephemeral', 'nip40-expiration', 'nip11-cors']);
  const html = renderLabsReportHtml(report);
  t.match(html, /^<!doctype html>/);
  t.match(html, new RegExp(`<span class="score">${report.score}</span>`));
  for (const h of ['Transport', 'NIP-01', 'NIP-11', 'NIP-40']) t.match(html, new RegExp(`<h3>${h}`), `group ${h}`);
  t.ok(
    html.indexOf('<h3>NIP-01') < html.indexOf('<h3>NIP-11') && html.indexOf('<h3>NIP-11') < html.indexOf('<h3>NIP-40'),
    'NIPs in number order',
  );
  t.match(html, /not expected to be stored by relays/, 'the quote behind kind-ephemeral');
  t.match(html, /<tr id="kind-ephemeral">[\s\S]*?s-warn/, 'its status');
  t.match(html, /<svg role="img" aria-label="latency percentiles/);
  t.match(html, /connect p50/);
  t.match(html, /Advertised versus observed/);
  t.match(html, /supported_nips: 40/);
  const page = reportPageReply(new TextEncoder().encode(JSON.stringify(report)));
  t.equal(page.body, html, 'the reply renders the stored JSON');
  t.match(page.headers['content-security-policy'], /default-src 'none'/);
});

t.test('text from the relay is escaped', async (t) => {
  const relay = await startTestRelay({
    info: { ...defaultInfo(), name: '<script>alert(1)</script>', software: '"><img src=x onerror=alert(2)>' },
  });
  t.teardown(() => relay.close());
  const { report } = await probe(relay.url, 'custom', ['nip11-fields', 'closed-prefix']);
  const html = renderLabsReportHtml(report);
  t.notMatch(html, /<script>alert/);
  t.notMatch(html, /<img src=x/);
  t.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  t.notMatch(html, /<script/i, 'no script element at all');
});

t.test('which requests get HTML', async (t) => {
  t.equal(wantsReportHtml('html', undefined), true);
  t.equal(wantsReportHtml('json', 'text/html'), false);
  t.equal(wantsReportHtml(undefined, 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'), true, 'a browser');
  t.equal(wantsReportHtml(undefined, '*/*'), false, 'curl: JSON');
  t.equal(wantsReportHtml(undefined, undefined), false);
  t.equal(wantsReportHtml(undefined, 'application/json, text/html'), false, 'asks for JSON too: JSON');
});

t.test('fails and warns are listed first, linked to their rows', async (t) => {
  const relay = await startMiniRelay({ keepEphemeralMs: 60_000, noCors: true });
  t.teardown(() => relay.close());
  const { report } = await probe(relay.url, 'custom', ['nip11-cors', 'kind-ephemeral', 'dns']);
  const html = renderLabsReportHtml(report);
  const needs = html.slice(html.indexOf('<h2>Needs attention</h2>'), html.indexOf('<h2>Checks by NIP</h2>'));
  t.match(needs, /s-fail">fail<\/span> <a href="#nip11-cors">/);
  t.match(needs, /s-warn">warn<\/span> <a href="#kind-ephemeral">/);
  t.notMatch(needs, /#dns/, 'a pass is not listed');
  t.ok(needs.indexOf('nip11-cors') < needs.indexOf('kind-ephemeral'), 'fail before warn');
});
