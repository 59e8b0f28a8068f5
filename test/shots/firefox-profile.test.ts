// Firefox starts from a copy of its build's profile template (actors/browser-pool/launchers/
// firefox-profile.ts): the first launch makes the template (0700, no preferences, no locks, no
// session), a launch runs on a private copy that is removed once that Firefox has exited, a
// folder that is not ours is never used, and copies a killed pool left behind are cleaned up.
// The template is made in this file's own temporary folder (TMPDIR), not the machine's.
import t from 'tap';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  chmodSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firefox, DEBIAN_FIREFOX } from '../../actors/browser-pool/launchers/firefox.ts';
import {
  firefoxBuildId,
  profileCopy,
  removeLeftCopies,
  templateDir,
  trustedTemplate,
} from '../../actors/browser-pool/launchers/firefox-profile.ts';

const own = mkdtempSync(join(tmpdir(), 'payloads-ffprofile-test-'));
process.env.TMPDIR = own; // os.tmpdir() reads it at each call
t.teardown(() => {
  delete process.env.TMPDIR;
  rmSync(own, { recursive: true, force: true });
});

/** The profile folder a launched Firefox runs on (its `--profile` argument). */
const profileOf = (args: string[]) => args[args.indexOf('--profile') + 1] ?? '';
const exited = (p: { exitCode: number | null; once(e: 'exit', f: () => void): void }) =>
  new Promise<void>((r) => (p.exitCode !== null ? r() : p.once('exit', () => r())));

t.test('the first launch makes the template; every launch runs on a copy removed after its exit', async (t) => {
  const build = firefoxBuildId(DEBIAN_FIREFOX);
  t.match(build, /^\d{14}$/, 'the build id read from application.ini');
  const b1 = await firefox().launch({ scheme: 'light' });
  const dir = templateDir(build!);
  t.ok(trustedTemplate(dir), 'the template exists, ours, 0700');
  t.equal(statSync(dir).mode & 0o777, 0o700);
  const inTemplate = readdirSync(dir);
  for (const name of ['prefs.js', 'user.js', 'lock', 'sessionstore.jsonlz4', 'cache2'])
    t.notOk(inTemplate.includes(name), `no ${name} in the template`);
  t.ok(inTemplate.includes('startupCache'), 'the startup cache is (what makes a copy start faster)');
  const p1 = b1.process()!;
  const copy1 = profileOf(p1.spawnargs);
  t.match(copy1, /payloads-firefox-profile-use-/, `the first browser runs on a copy (${copy1})`);
  const page = await b1.newPage();
  await page.goto('data:text/html,<p>ok</p>');
  t.equal(await page.evaluate(() => document.body.textContent), 'ok', 'and works');
  await b1.close();
  await exited(p1);
  t.notOk(existsSync(copy1), 'the copy is removed once that Firefox exited');
  // every launch takes its copy from profileCopy (launchers/firefox.ts): two copies are two folders,
  // each with the template's files (without a second Firefox launch, ~5 s of CPU)
  const [c2, c3] = [profileCopy(dir), profileCopy(dir)];
  t.teardown(() => {
    for (const c of [c2, c3]) rmSync(c, { recursive: true, force: true });
  });
  t.ok(c2 !== c3 && c2 !== copy1 && c3 !== copy1, 'the next launch gets a copy of its own');
  t.same(readdirSync(c2).sort(), [...inTemplate].sort(), 'a copy holds what the template holds');
  t.equal(readdirSync(own).filter((n) => n.startsWith('payloads-firefox-profile-new-')).length, 0, 'no half-made template left');
});

t.test('a template folder that others could have written is not used', async (t) => {
  const dir = join(own, 'open-template');
  mkdirSync(dir);
  writeFileSync(join(dir, 'compatibility.ini'), '');
  chmodSync(dir, 0o755);
  t.notOk(trustedTemplate(dir), 'group/other may read or enter it: not used');
  chmodSync(dir, 0o700);
  t.ok(trustedTemplate(dir), '0700 and ours: used');
  const link = join(own, 'linked-template');
  symlinkSync(dir, link);
  t.notOk(trustedTemplate(link), 'a symbolic link to it: not used');
  t.notOk(trustedTemplate(join(own, 'missing')), 'none: not used');
  // the build's template name taken by a folder that is not trusted: launches use new profiles and
  // do not try to make a template again each time
  const build = firefoxBuildId(DEBIAN_FIREFOX)!;
  const taken = templateDir(build);
  rmSync(taken, { recursive: true, force: true });
  mkdirSync(taken, { mode: 0o755 });
  writeFileSync(join(taken, 'compatibility.ini'), '');
  chmodSync(taken, 0o755);
  const b = await firefox().launch({ scheme: 'light' });
  const p = b.process()!;
  t.notMatch(profileOf(p.spawnargs), /payloads-firefox-profile-use-/, "a new profile of puppeteer's, not a copy of the folder");
  t.equal(readdirSync(own).filter((n) => n.startsWith('payloads-firefox-profile-new-')).length, 0, 'and no template made');
  await b.close();
  await exited(p);
  rmSync(taken, { recursive: true, force: true });
});

t.test('copies left by a killed pool are removed; one in use is kept', async (t) => {
  const make = (name: string, lockPid?: number, ageMs = 0) => {
    const d = join(own, `payloads-firefox-profile-use-${name}`);
    mkdirSync(d);
    if (lockPid !== undefined) symlinkSync(`127.0.0.1:+${lockPid}`, join(d, 'lock'));
    if (ageMs) utimesSync(d, new Date(Date.now() - ageMs), new Date(Date.now() - ageMs));
    return d;
  };
  const dead = make('dead', 2 ** 22 + 12345); // above the kernel's pid limit: no such process
  const live = make('live', process.pid);
  const young = make('young');
  const old = make('old', undefined, 20 * 60_000);
  t.equal(removeLeftCopies(), 2);
  t.notOk(existsSync(dead), 'locked by a Firefox that is gone: removed');
  t.ok(existsSync(live), 'locked by a live process: kept');
  t.ok(existsSync(young), 'unlocked and new (a Firefox starting): kept');
  t.notOk(existsSync(old), 'unlocked and older than ten minutes: removed');
});
