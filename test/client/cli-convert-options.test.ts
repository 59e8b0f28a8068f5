// `payloads convert`'s page-control flags make the websitepro body the API documents (issue 43).
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { addConvertOptions, convertBody } from '../../client/src/convert-options.ts';

const parse = (args: string[]) => {
  const cmd = addConvertOptions(new Command().argument('<url>').exitOverride());
  cmd.parse(['node', 'convert', ...args]);
  return convertBody(cmd.args[0]!, cmd.opts());
};

t.test('no flags: markdown of the main content, nothing else sent', async (t) => {
  t.same(parse(['https://example.com/']), { url: 'https://example.com/', outputs: ['markdown'] });
});

t.test('every control flag', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'convert-flags-'));
  writeFileSync(join(dir, 'actions.json'), '[{"type":"click","selector":"#more"},{"type":"wait","ms":500}]');
  writeFileSync(join(dir, 'footer.html'), '<span class="pageNumber"></span>');
  const body = parse([
    'https://example.com/',
    '--links',
    '--images',
    '--raw-html',
    '--text',
    '--pdf',
    '--remove',
    '.ad',
    '--remove',
    'nav',
    '--target',
    'article',
    '--no-main-content',
    '--wait-for',
    '#app',
    '--timeout',
    '20',
    '--header',
    'X-Token: abc:def',
    '--cookie',
    'sid=1=2',
    '--actions',
    `@${join(dir, 'actions.json')}`,
    '--pdf-format',
    'Letter',
    '--pdf-landscape',
    '--pdf-margin',
    '1cm,2cm',
    '--pdf-scale',
    '0.8',
    '--pdf-no-background',
    '--pdf-page-ranges',
    '1-2',
    '--pdf-footer',
    `@${join(dir, 'footer.html')}`,
  ]);
  t.same(body, {
    url: 'https://example.com/',
    outputs: ['text', 'pdf', 'links', 'images', 'rawHtml'],
    removeSelectors: ['.ad', 'nav'],
    targetSelectors: ['article'],
    mainContent: false,
    waitFor: '#app',
    timeout: 20,
    headers: { 'X-Token': 'abc:def' },
    cookies: [{ name: 'sid', value: '1=2' }],
    actions: [
      { type: 'click', selector: '#more' },
      { type: 'wait', ms: 500 },
    ],
    pdf: {
      format: 'Letter',
      landscape: true,
      margin: { top: '1cm', right: '2cm', bottom: '1cm', left: '2cm' },
      scale: 0.8,
      printBackground: false,
      pageRanges: '1-2',
      footerTemplate: '<span class="pageNumber"></span>',
    },
  });
});

t.test('a header without a value is refused before any request', async (t) => {
  t.throws(() => parse(['https://example.com/', '--header', 'X-Token']), /expected name:value/);
});
