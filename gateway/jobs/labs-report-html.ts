// labs.report/1 as a page a person reads: summary, score, the checks grouped by NIP with the quote
// that decided each level and what was observed, the latency percentiles as a small chart, and the
// advertised-versus-observed table. Rendered from the stored JSON on download (the JSON stays the
// stored file and the default answer). Everything from the report is escaped: messages and NIP-11
// fields come from the relay under test.
import type { LabsReport, ReportCheck } from '../../shared/schemas/labs-report.ts';

const esc = (v: unknown): string =>
  String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const STATUS_ORDER = ['fail', 'warn', 'pass', 'info', 'skip'] as const;

const nipTitle = (nip: string) => (nip === 'transport' ? 'Transport (DNS, TCP, TLS, WebSocket)' : `NIP-${nip}`);

/** The checks by the NIP of the rule that judged them, NIPs in number order, transport first. */
function byNip(checks: ReportCheck[]): [string, ReportCheck[]][] {
  const groups = new Map<string, ReportCheck[]>();
  for (const c of checks) groups.set(c.basis.nip, [...(groups.get(c.basis.nip) ?? []), c]);
  const rank = (n: string) => (n === 'transport' ? -1 : Number.parseInt(n, 10) || 999);
  return [...groups.entries()].sort((a, b) => rank(a[0]) - rank(b[0]));
}

/** What was observed, short: the details a person can read in a table cell (the JSON has all). */
function observed(c: ReportCheck): string {
  const d = c.details ?? {};
  const keys = Object.keys(d).slice(0, 6);
  if (!keys.length) return '';
  const show = (v: unknown) => {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    return s.length > 160 ? `${s.slice(0, 157)}…` : s;
  };
  // open for what a person reads first (fail, warn); folded for the rest
  const open = c.status === 'fail' || c.status === 'warn' ? ' open' : '';
  return `<details${open}><summary>what was observed</summary><dl>${keys.map((k) => `<dt>${esc(k)}</dt><dd><code>${esc(show(d[k]))}</code></dd>`).join('')}</dl></details>`;
}

/** Horizontal bars of p50/p90/p99 per kind of round trip, as inline SVG (no script, no fetch). */
function latencyChart(l: LabsReport['latency']): string {
  const rows = (['connect', 'eose', 'ok'] as const).flatMap((k) =>
    l[k] ? (['p50', 'p90', 'p99'] as const).map((q) => ({ label: `${k} ${q}`, ms: l[k]![q] })) : [],
  );
  if (!rows.length) return '<p>No latency samples.</p>';
  const max = Math.max(...rows.map((r) => r.ms), 1);
  const h = 18;
  const bars = rows
    .map((r, i) => {
      const w = Math.max(1, Math.round((r.ms / max) * 360));
      return `<text x="0" y="${i * h + 13}">${esc(r.label)}</text><rect x="110" y="${i * h + 3}" width="${w}" height="${h - 6}" class="bar"/><text x="${116 + w}" y="${i * h + 13}">${esc(r.ms)} ms</text>`;
    })
    .join('');
  return `<svg role="img" aria-label="latency percentiles in milliseconds" width="560" height="${rows.length * h + 4}" viewBox="0 0 560 ${rows.length * h + 4}">${bars}</svg>`;
}

const CSS = `body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{margin-top:2rem;font-size:1.2rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border-bottom:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f7}.score{font-size:2.2rem;font-weight:700}
.s{display:inline-block;min-width:3rem;text-align:center;border-radius:.3rem;padding:0 .3rem;font-weight:600;font-size:.85rem}
.s-pass{background:#d8f5d8}.s-fail{background:#ffd2d2}.s-warn{background:#ffeec2}.s-info{background:#dde8ff}.s-skip{background:#eee}
blockquote{margin:.2rem 0;padding-left:.6rem;border-left:3px solid #ccc;color:#444;font-size:.9rem}
dl{margin:0;font-size:.85rem}dt{font-weight:600}dd{margin:0 0 .2rem 0}code{word-break:break-all}
summary{cursor:pointer;font-size:.85rem;color:#444}li{margin:.2rem 0}svg text{font-size:12px}.bar{fill:#4a78c2}.muted{color:#666}`;

export function renderLabsReportHtml(report: LabsReport): string {
  const s = report.summary;
  const title = `labs ${report.module} report: ${report.relay.url}`;
  const counts = STATUS_ORDER.map((k) => `<span class="s s-${k}">${k} ${esc(s[k])}</span>`).join(' ');
  const groups = byNip(report.checks)
    .map(
      ([nip, cs]) => `<h3>${esc(nipTitle(nip))}</h3>
<table><thead><tr><th>check</th><th>status</th><th>result and what was observed</th><th>basis</th></tr></thead><tbody>
${cs.map((c) => `<tr id="${esc(c.id)}"><td><code>${esc(c.id)}</code><br>${esc(c.title)}</td><td><span class="s s-${esc(c.status)}">${esc(c.status)}</span></td><td>${esc(c.message)}${observed(c)}</td><td>${esc(nipTitle(c.basis.nip))}${c.basis.section ? ` (${esc(c.basis.section)})` : ''}, <b>${esc(c.basis.level)}</b>${c.advertised === false ? ', <span class="muted">not in supported_nips</span>' : ''}${c.basis.quote ? `<blockquote>${esc(c.basis.quote)}</blockquote>` : ''}</td></tr>`).join('\n')}
</tbody></table>`,
    )
    .join('\n');
  const attention = report.checks
    .filter((c) => c.status === 'fail' || c.status === 'warn')
    .sort((a, b) => (a.status === b.status ? 0 : a.status === 'fail' ? -1 : 1));
  const needs = attention.length
    ? `<h2>Needs attention</h2><ul>${attention.map((c) => `<li><span class="s s-${esc(c.status)}">${esc(c.status)}</span> <a href="#${esc(c.id)}"><code>${esc(c.id)}</code></a>: ${esc(c.message)}</li>`).join('')}</ul>`
    : '';
  const avo = report.advertisedVsObserved.length
    ? `<table><thead><tr><th>claim</th><th>advertised</th><th>observed</th><th>agrees</th></tr></thead><tbody>${report.advertisedVsObserved.map((r) => `<tr><td><code>${esc(r.claim)}</code></td><td>${esc(JSON.stringify(r.advertised))}</td><td>${esc(JSON.stringify(r.observed))}</td><td>${r.agrees === null ? '<span class="muted">cannot tell</span>' : r.agrees ? 'yes' : '<b>no</b>'}${r.checkId ? ` (<a href="#${esc(r.checkId)}">${esc(r.checkId)}</a>)` : ''}</td></tr>`).join('')}</tbody></table>`
    : '<p>No NIP-11 claims to compare.</p>';
  const relay = report.relay;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${CSS}</style></head><body>
<h1>${esc(relay.name ?? relay.url)}</h1>
<p class="muted"><code>${esc(relay.url)}</code>${relay.software ? ` · ${esc(relay.software)}${relay.version ? ` ${esc(relay.version)}` : ''}` : ''} · module <b>${esc(report.module)}</b> · ${esc(report.startedAt)} · ${esc(Math.round(report.durationMs / 100) / 10)} s · supported_nips: ${relay.supportedNips ? esc(relay.supportedNips.join(', ')) : 'not stated'}</p>
<h2>Summary</h2>
<p><span class="score">${esc(report.score)}</span> / 100 <span class="muted">(pass + ½ warn over pass, warn and fail)</span></p>
<p>${counts} · ${esc(s.total)} checks</p>
<p class="muted">Levels come from the NIPs' own words: MUST can fail, SHOULD and conventions warn, MAY is info; an optional NIP the relay does not list in supported_nips can at most warn.</p>
${needs}
<h2>Checks by NIP</h2>
${groups}
<h2>Latency</h2>
${latencyChart(report.latency)}
<h2>Advertised versus observed</h2>
${avo}
<h2>Test data</h2>
<p>${esc(report.testData.eventsSent)} events sent from throwaway keys, tagged <code>${esc(JSON.stringify(report.testData.marker))}</code>; ${esc(report.testData.eventsDeleted)} named in NIP-09 deletion requests; deletion honoured: ${report.testData.deletionHonoured === null ? 'cannot tell' : report.testData.deletionHonoured ? 'yes' : '<b>no</b>'}.</p>
<p class="muted">${esc(report.schema)} · the same report as JSON: ask without <code>format=html</code>.</p>
</body></html>
`;
}

/** `format=html`, or a client that asks for HTML and not JSON (a browser); JSON stays the default. */
export function wantsReportHtml(format: unknown, accept: string | undefined): boolean {
  if (format === 'html') return true;
  if (format === 'json') return false;
  const a = (accept ?? '').toLowerCase();
  return a.includes('text/html') && !a.includes('application/json');
}

/** The reply for a stored report asked for as HTML: the same JSON, rendered; nothing from it runs. */
export function reportPageReply(json: Uint8Array): { body: string; headers: Record<string, string> } {
  const report = JSON.parse(new TextDecoder().decode(json)) as LabsReport;
  return {
    body: renderLabsReportHtml(report),
    headers: {
      'content-type': 'text/html; charset=utf-8',
      // the page only needs its own inline style; relay-controlled text is escaped, and this stops anything else
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
      'x-content-type-options': 'nosniff',
      'cache-control': 'private, no-store',
      vary: 'Accept',
    },
  };
}
