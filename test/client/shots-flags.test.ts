// `payloads shots` flags for issue 43's options: parsed by the command's own definitions into the
// request's `options` (repeatable flags in order, headers and cookies split, files read).
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { addShotControlFlags, shotControlsFromFlags, type ShotFlags } from '../../client/src/shots-flags.ts';
import { program } from '../../client/src/cli.ts';

const parse = (args: string[]) => {
  const cmd = addShotControlFlags(new Command('shots').exitOverride());
  cmd.parse(args, { from: 'user' });
  return shotControlsFromFlags(cmd.opts<ShotFlags>());
};

t.test('flags become options', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'shots-flags-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'a.js'), 'document.title = "x"');
  t.same(parse([]), {}, 'no flag, no option');
  t.same(
    parse([
      '--selector',
      '#card',
      '--hide',
      '.ad',
      '--hide',
      'header, footer',
      '--css',
      'body{color:red}',
      '--js-file',
      join(dir, 'a.js'),
      '--click',
      '#more',
      '--wait-for',
      '#late',
      '--action',
      '{"type":"press","key":"Enter"}',
      '--action',
      '{"type":"wait","ms":100}',
      '--format',
      'jpeg',
      '--quality',
      '70',
      '--thumb-width',
      '200',
      '--user-agent',
      'UA/1',
      '--locale',
      'de-DE',
      '--timezone',
      'Europe/Berlin',
      '--header',
      'X-Token: a:b',
      '--cookie',
      'sid=x=y',
      '--block-ads',
    ]),
    {
      selector: '#card',
      hideSelectors: ['.ad', 'header, footer'],
      css: 'body{color:red}',
      js: 'document.title = "x"',
      click: '#more',
      waitFor: '#late',
      actions: [
        { type: 'press', key: 'Enter' },
        { type: 'wait', ms: 100 },
      ],
      format: 'jpeg',
      quality: 70,
      thumbWidth: 200,
      userAgent: 'UA/1',
      locale: 'de-DE',
      timezone: 'Europe/Berlin',
      headers: { 'X-Token': 'a:b' },
      cookies: [{ name: 'sid', value: 'x=y' }],
      blockAds: true,
    },
  );
  t.throws(() => parse(['--format', 'gif']), /Allowed choices are png, jpeg, webp/);
  t.throws(() => parse(['--header', 'nocolon']), /expected name:value/);
  t.throws(() => parse(['--action', '{no']), /not JSON/);
  const shots = program({ out: process.stdout, err: process.stderr } as never).commands.find((c) => c.name() === 'shots');
  t.ok(
    shots?.options.some((o) => o.long === '--block-ads'),
    'the shots command has the flags',
  );
});
