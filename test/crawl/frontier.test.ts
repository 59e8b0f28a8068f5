// The crawl's frontier and visited set on a real nats-server: every URL admitted once across two
// coordinators, never past the limit, nothing lost when a coordinator dies mid-admission, and a
// page handed out once the cursor moves.
import t from 'tap';
import { createHash } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { FRONTIER_STREAM, Frontier, VISITED_BUCKET, frontierSubject } from '../../shared/crawl/frontier.ts';
import { startTestNats } from '../helpers/nats.ts';

t.test('frontier on NATS', async (t) => {
  const nats = await startTestNats(t);
  const a = await Frontier.open(nats.nc);
  const b = await Frontier.open(await nats.connect('coordinator-b'));
  const jsm = await jetstreamManager(nats.nc);
  const subjectCount = async (subject: string, stream = FRONTIER_STREAM) =>
    (await jsm.streams.info(stream, { subjects_filter: subject })).state.subjects?.[subject] ?? 0;

  t.test('rel=canonical: a copy of a page, or the page standing for its canonical URL', async (t) => {
    const job = 'job_canonical';
    t.match(await a.admit(job, { url: 'https://e.com/b', depth: 1 }, 10), { ok: true, n: 1 });
    t.equal(await a.claimCanonical(job, 'https://e.com/b#x', 7), 'duplicate', 'its canonical is a page of the crawl');
    t.equal(await a.claimCanonical(job, 'https://e.com/c', 8), 'claimed', 'a canonical not seen yet: page 8 stands for it');
    t.equal(await b.claimCanonical(job, 'https://e.com/c?utm_source=x', 8), 'claimed', 'the same page again: the same answer');
    t.equal(await b.claimCanonical(job, 'https://e.com/c', 9), 'duplicate', 'another page naming it is a copy');
    t.same(await b.admit(job, { url: 'https://e.com/c', depth: 2 }, 10), { ok: false, reason: 'duplicate' }, 'never admitted later');
  });

  t.test('duplicates fold by uniqueKey', async (t) => {
    const job = 'job_dupes';
    t.match(await a.admit(job, { url: 'https://e.com/', depth: 0 }, 10), { ok: true, n: 1 });
    t.same(await a.admit(job, { url: 'https://E.com:443/#top', depth: 1 }, 10), { ok: false, reason: 'duplicate' });
    t.same(await b.admit(job, { url: 'https://e.com/?utm_source=x', depth: 1 }, 10), { ok: false, reason: 'duplicate' });
    t.match(await b.admit(job, { url: 'https://e.com/a/', depth: 1, from: 'https://e.com/' }, 10), { ok: true, n: 2 });
    t.same(await a.admit(job, { url: 'https://e.com/a', depth: 1 }, 10), { ok: false, reason: 'duplicate' });
    t.same(await a.admit(job, { url: 'mailto:x@e.com', depth: 1 }, 10), { ok: false, reason: 'bad_url' });
    t.same(
      await a.admit('job_other', { url: 'https://e.com/', depth: 0 }, 10),
      { ok: true, n: 1, seq: (await a.pending('job_other', 1)).entries[0]?.seq },
      'crawls are apart',
    );
    t.same(await a.counts(job), { admitted: 2, taken: 0 });
  });

  t.test('two coordinators racing: each URL once, never past the limit', async (t) => {
    const job = 'job_race';
    const urls = Array.from({ length: 40 }, (_, i) => `https://e.com/p/${i % 25}`); // 25 distinct, 15 repeated
    const results = await Promise.all(
      urls.flatMap((u, i) => [a.admit(job, { url: u, depth: 1 }, 12), b.admit(job, { url: u, depth: i % 3 }, 12)]),
    );
    const ok = results.filter((r) => r.ok) as { n: number }[];
    t.equal(ok.length, 12, 'exactly the limit admitted');
    t.same(
      ok.map((r) => r.n).sort((x, y) => x - y),
      Array.from({ length: 12 }, (_, i) => i + 1),
      'ordinals dense and unique',
    );
    t.equal(await subjectCount(frontierSubject(job)), 12, 'the frontier holds each once');
    const { entries } = await a.pending(job, 100);
    t.equal(new Set(entries.map((e) => e.uniqueKey)).size, 12, 'no URL twice');
    t.ok(results.every((r) => r.ok || r.reason === 'duplicate' || r.reason === 'limit'));

    // a full crawl writes nothing more for new URLs (a trap page's endless links cost reads only)
    const kvSubjects = async () => (await jsm.streams.info(`KV_${VISITED_BUCKET}`)).state.messages;
    const before = await kvSubjects();
    for (let i = 0; i < 200; i++) t.equal((await a.admit(job, { url: `https://e.com/trap?page=${i}`, depth: 5 }, 12)).ok, false);
    t.equal(await kvSubjects(), before, 'no visited entry past the limit');
  });

  t.test("a page's links at once (admitMany): in order, repeats folded, two coordinators racing", async (t) => {
    const job = 'job_many';
    const links = ['https://e.com/x', 'https://e.com/y', 'https://E.com/x#top', 'mailto:a@e.com', 'https://e.com/z'];
    const first = await a.admitMany(
      job,
      links.map((url) => ({ url, depth: 1 })),
      100,
    );
    t.match(first, [
      { ok: true, n: 1 },
      { ok: true, n: 2 },
      { ok: false, reason: 'duplicate' },
      { ok: false, reason: 'bad_url' },
      { ok: true, n: 3 },
    ]);
    // two coordinators with overlapping pages of links, 9 slots left for 20 distinct URLs
    const pageOf = (from: number) => Array.from({ length: 12 }, (_, i) => ({ url: `https://e.com/m/${from + i}`, depth: 2 }));
    const [ra, rb] = await Promise.all([a.admitMany(job, pageOf(0), 12), b.admitMany(job, pageOf(8), 12)]);
    const ok = [...ra, ...rb].filter((r) => r.ok) as { n: number }[];
    t.same(
      ok.map((r) => r.n).sort((x, y) => x - y),
      [4, 5, 6, 7, 8, 9, 10, 11, 12],
      'the 9 slots left, each ordinal once',
    );
    t.ok([...ra, ...rb].every((r) => r.ok || r.reason === 'duplicate' || r.reason === 'limit'));
    const { entries } = await a.pending(job, 100);
    t.equal(entries.length, 12, 'the frontier holds the limit');
    t.equal(new Set(entries.map((e) => e.uniqueKey)).size, 12, 'no URL twice');
    t.same(
      entries.map((e) => e.n),
      Array.from({ length: 12 }, (_, i) => i + 1),
      'in ordinal order',
    );
    const xs = entries.filter((e) => e.url.startsWith('https://e.com/m/')).map((e) => Number(e.url.split('/').pop()));
    const mine = xs.filter((x) => x < 8);
    t.same(
      mine,
      [...mine].sort((p, q) => p - q),
      "one coordinator's links keep their page order",
    );
  });

  t.test('a coordinator that died mid-admission loses nothing and doubles nothing', async (t) => {
    const job = 'job_crash';
    const kv = await new Kvm(nats.nc).open(VISITED_BUCKET);
    const h = (k: string) => createHash('sha256').update(k).digest('hex').slice(0, 40);
    // died after its visited entry, before the publish: the redelivered page admits it again
    await kv.create(`${job}.${h('https://e.com/lost')}`, JSON.stringify({ st: 'admitting', at: Date.now() }));
    t.match(await b.admit(job, { url: 'https://e.com/lost', depth: 1 }, 10), { ok: true, n: 1 }, 'finished by the next try');
    t.same(await b.admit(job, { url: 'https://e.com/lost', depth: 1 }, 10), { ok: false, reason: 'duplicate' });
    // died after the publish, before marking it queued: the retry lands once (the message id)
    const key = 'https://e.com/half';
    await kv.create(`${job}.${h(key)}`, JSON.stringify({ st: 'admitting', at: Date.now() }));
    await jetstream(nats.nc).publish(frontierSubject(job), JSON.stringify({ url: key, uniqueKey: key, depth: 1, n: 2 }), {
      msgID: `${job}:${h(key)}`,
      expect: { lastSubjectSequence: (await a.pending(job, 1)).entries[0]!.seq },
    });
    t.match(await a.admit(job, { url: key, depth: 1 }, 10), { ok: true, n: 2 }, 'the ordinal it already had');
    t.equal(await subjectCount(frontierSubject(job)), 2, 'in the frontier once');
    t.same(await a.admit(job, { url: key, depth: 1 }, 10), { ok: false, reason: 'duplicate' });
  });

  t.test('pending and commit: a page handed out once', async (t) => {
    const job = 'job_take';
    for (let i = 0; i < 7; i++) await a.admit(job, { url: `https://e.com/t/${i}`, depth: 1 }, 100);
    const pa = await a.pending(job, 3);
    const pb = await b.pending(job, 3);
    t.same(
      pa.entries.map((e) => e.n),
      [1, 2, 3],
    );
    t.same(
      pb.entries.map((e) => e.n),
      [1, 2, 3],
      'both see the same next pages',
    );
    t.equal(await a.commit(job, pa.cursor, pa.entries.at(-1)!), true);
    t.equal(await b.commit(job, pb.cursor, pb.entries.at(-1)!), false, 'the second coordinator is told it lost');
    const next = await b.pending(job, 10);
    t.same(
      next.entries.map((e) => e.n),
      [4, 5, 6, 7],
    );
    t.equal(await b.commit(job, next.cursor, next.entries.at(-1)!), true);
    t.same(await b.counts(job), { admitted: 7, taken: 7 });
    t.same((await a.pending(job, 10)).entries, [], 'nothing left');

    await a.drop(job);
    t.same(await a.counts(job), { admitted: 0, taken: 0 }, 'dropped');
    t.equal(await subjectCount(frontierSubject(job)), 0);
  });
  t.test('a link to a page the crawl has is a duplicate without a read, after the first answer', async (t) => {
    const job = 'job_known';
    const c = await Frontier.open(await nats.connect('coordinator-c'));
    let reads = 0;
    const tap = await nats.connect('tap');
    tap.subscribe(`$JS.API.*.*.*.KV_${VISITED_BUCKET}.>`, { callback: () => void reads++ });
    tap.subscribe(`$JS.API.STREAM.MSG.GET.KV_${VISITED_BUCKET}`, { callback: () => void reads++ });
    await tap.flush();
    const links = ['https://e.com/', 'https://e.com/a', 'https://e.com/b'].map((url) => ({ url, depth: 1 }));
    t.match(await c.admitMany(job, links, 10), [{ ok: true }, { ok: true }, { ok: true }], 'admitted');
    await tap.flush();
    const before = reads;
    t.same(
      (await c.admitMany(job, links, 10)).map((r) => r),
      links.map(() => ({ ok: false, reason: 'duplicate' })),
      'the same links again: duplicates',
    );
    await tap.flush();
    t.equal(reads - before, 0, 'no read of the visited set for them');
    t.same(
      await b.admit(job, { url: 'https://e.com/a', depth: 2 }, 10),
      { ok: false, reason: 'duplicate' },
      'another coordinator reads and agrees',
    );
    await c.drop(job);
    t.match(await c.admit(job, { url: 'https://e.com/a', depth: 1 }, 10), { ok: true, n: 1 }, 'a dropped crawl forgets them');
    await c.drop(job);
  });
});
