// The `shots` command's flags for the options that shape the page and the file (issue 43), kept
// beside the command so cli.ts only adds them: --selector, --hide, --css/--css-file, --js/--js-file,
// --click, --wait-for, --action/--actions-file, --format, --quality, --thumb-width, --user-agent,
// --locale, --timezone, --header, --cookie, --block-ads.
import { readFileSync } from 'node:fs';
import { type Command, InvalidArgumentError, Option } from 'commander';

const collect = (v: string, prev: string[] = []) => [...prev, v];
const int = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('not a whole number');
  return n;
};

export interface ShotFlags {
  selector?: string;
  hide?: string[];
  css?: string;
  cssFile?: string;
  js?: string;
  jsFile?: string;
  click?: string;
  waitFor?: string;
  action?: string[];
  actionsFile?: string;
  format?: 'png' | 'jpeg' | 'webp';
  quality?: number;
  thumbWidth?: number;
  userAgent?: string;
  locale?: string;
  timezone?: string;
  header?: string[];
  cookie?: string[];
  blockAds?: boolean;
}

export function addShotControlFlags(cmd: Command): Command {
  return cmd
    .option('--selector <css>', 'capture only this element (not with --full-page)')
    .option('--hide <css>', 'hide elements matching this selector (repeatable)', collect)
    .option('--css <text>', 'a style sheet added before the capture (at most 16 KB)')
    .option('--css-file <path>', 'the style sheet from a file')
    .option('--js <code>', 'a script run in the page before the capture (at most 16 KB)')
    .option('--js-file <path>', 'the script from a file')
    .option('--click <css>', 'click this element before the capture')
    .option('--wait-for <css>', 'wait until this selector matches')
    .option('--action <json>', 'an action, e.g. \'{"type":"click","selector":"#more"}\' (repeatable, in order)', collect)
    .option('--actions-file <path>', 'a JSON array of actions')
    .addOption(new Option('--format <format>', 'image format').choices(['png', 'jpeg', 'webp']))
    .option('--quality <n>', 'jpeg/webp quality 1..100 (default 80)', int)
    .option('--thumb-width <px>', 'WebP thumbnail width 100..800 (default 400)', int)
    .option('--user-agent <ua>', 'the User-Agent to send and show')
    .option('--locale <tag>', 'language, e.g. de-DE (Chromium browsers)')
    .option('--timezone <iana>', 'time zone, e.g. Europe/Berlin')
    .option('--header <name:value>', 'a request header for the target origin only (repeatable)', collect)
    .option('--cookie <name=value>', 'a cookie for the target origin only (repeatable)', collect)
    .option('--block-ads', 'block ad and tracker hosts');
}

/** The request's `options` fields from the flags (only those given). Throws on a malformed flag. */
export function shotControlsFromFlags(o: ShotFlags): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const set = (k: string, v: unknown) => {
    if (v !== undefined) out[k] = v;
  };
  set('selector', o.selector);
  set('hideSelectors', o.hide?.length ? o.hide : undefined);
  set('css', o.cssFile ? readFileSync(o.cssFile, 'utf8') : o.css);
  set('js', o.jsFile ? readFileSync(o.jsFile, 'utf8') : o.js);
  set('click', o.click);
  set('waitFor', o.waitFor);
  const actions = [
    ...(o.actionsFile ? (JSON.parse(readFileSync(o.actionsFile, 'utf8')) as unknown[]) : []),
    ...(o.action ?? []).map((a) => {
      try {
        return JSON.parse(a) as unknown;
      } catch {
        throw new InvalidArgumentError(`--action ${a}: not JSON`);
      }
    }),
  ];
  set('actions', actions.length ? actions : undefined);
  set('format', o.format);
  set('quality', o.quality);
  set('thumbWidth', o.thumbWidth);
  set('userAgent', o.userAgent);
  set('locale', o.locale);
  set('timezone', o.timezone);
  if (o.header?.length)
    out.headers = Object.fromEntries(
      o.header.map((h) => {
        const i = h.indexOf(':');
        if (i < 1) throw new InvalidArgumentError(`--header ${h}: expected name:value`);
        return [h.slice(0, i).trim(), h.slice(i + 1).trim()];
      }),
    );
  if (o.cookie?.length)
    out.cookies = o.cookie.map((c) => {
      const i = c.indexOf('=');
      if (i < 1) throw new InvalidArgumentError(`--cookie ${c}: expected name=value`);
      return { name: c.slice(0, i), value: c.slice(i + 1) };
    });
  if (o.blockAds) out.blockAds = true;
  return out;
}
