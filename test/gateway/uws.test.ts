// The native uWS loader on the real packages: the build for the running Node and glibc loads, the
// packages whose `exports` omit ./package.json are found, and when nothing fits the refusal names
// the Node, its ABI, the C library, each package's version and the builds it has.
import t from 'tap';
import { createRequire } from 'node:module';
import {
  loadNativeUws,
  MAX_REQUEST_HEAD_BYTES,
  NativeUwsError,
  packageDir,
  libcOf,
  runtimeInfo,
  UWS_CANDIDATES,
} from '../../gateway/uws.ts';
import { createMetrics } from '../../gateway/metrics.ts';

const require = createRequire(import.meta.url);
const glibc = libcOf().match(/^glibc (\d+)\.(\d+)/);
const glibcAtLeast = (maj: number, min: number) =>
  Boolean(glibc && (Number(glibc[1]) > maj || (Number(glibc[1]) === maj && Number(glibc[2]) >= min)));
const triple = (abi: string) => `uws_${process.platform}_${process.arch}_${abi}.node`;

t.test('the native uWebSockets.js binary for this Node loads', async (t) => {
  const { uws, from, pkg, version } = loadNativeUws();
  t.match(from, new RegExp(`${triple(process.versions.modules)}$`));
  t.type(uws.App, 'function');
  // the newer uWS where its build loads (glibc >= 2.38), else the Debian 12 build
  t.equal(pkg, glibcAtLeast(2, 38) ? '@btc-vision/uwebsockets.js' : '@based/uws');
  t.match(version, /^\d+\.\d+\.\d+$/);
  // a working server from it, on loopback
  const app = uws.App().get('/*', (res) => {
    res.end('ok');
  });
  const port = await new Promise<number>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (s) => (s ? resolve(uws.us_socket_local_port(s)) : reject(new Error('listen')))),
  );
  t.equal(await (await fetch(`http://127.0.0.1:${port}/`)).text(), 'ok');
  app.close();
});

t.test('packages whose exports omit ./package.json are found (require.resolve cannot)', async (t) => {
  for (const { pkg } of UWS_CANDIDATES) {
    t.throws(() => require.resolve(`${pkg}/package.json`), { code: 'ERR_PACKAGE_PATH_NOT_EXPORTED' }, `${pkg}: the old way fails`);
    t.ok(packageDir(pkg), `${pkg} found`);
  }
  t.equal(packageDir('no-such-package-here'), undefined);
});

t.test('no fitting build: the refusal names the runtime, each package version and its builds', async (t) => {
  let err: NativeUwsError | undefined;
  try {
    loadNativeUws([
      { pkg: 'uWebSockets.js', binary: () => triple('999') },
      { pkg: 'no-such-package-here', binary: triple },
    ]);
  } catch (e) {
    err = e as NativeUwsError;
  }
  t.type(err, NativeUwsError);
  const msg = err!.message;
  t.match(msg, `Node ${process.versions.node} (ABI ${process.versions.modules}), ${process.platform}-${process.arch}, ${libcOf()}`);
  t.match(msg, /uWebSockets\.js \(@based\/uws\) 6\.0\.1: no build for ABI/);
  t.match(msg, /127 \(Node 22\), 131 \(Node 23\), 137 \(Node 24\)/, 'the builds the package has, by Node version');
  t.match(msg, 'no-such-package-here: not installed');
  t.match(msg, /no JS fallback/);
});

t.test(
  "a build that needs a newer glibc is refused with the loader's reason",
  { skip: glibcAtLeast(2, 38) && 'glibc >= 2.38 here: every build loads' },
  async (t) => {
    try {
      loadNativeUws([{ pkg: '@btc-vision/uwebsockets.js', binary: triple }]);
      t.fail('loaded');
    } catch (e) {
      t.type(e, NativeUwsError);
      t.match((e as Error).message, /@btc-vision\/uwebsockets\.js 20\.57\.0: .* does not load: .*GLIBC_2\.38/);
    }
  },
);

t.test("the packages' JS (and any fallback inside it) is never accepted as uWS", async (t) => {
  for (const { pkg } of UWS_CANDIDATES) {
    t.throws(() => loadNativeUws([{ pkg, binary: () => 'uws.js' }]), { name: 'NativeUwsError', message: /uws\.js is not a native addon/ });
  }
});

t.test('/metrics names the Node and uWS build in use', async (t) => {
  const info = runtimeInfo();
  t.equal(info.node, process.versions.node);
  const text = await createMetrics().registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith('payloads_runtime_info{'));
  t.ok(line, text.slice(0, 200));
  t.match(line, `node="${process.versions.node}"`);
  t.match(line, `abi="${process.versions.modules}"`);
  t.match(line, `uws="${loadNativeUws().pkg}@${loadNativeUws().version}"`);
  t.match(line, `uws_binary="${triple(process.versions.modules)}"`);
  t.match(line, / 1$/);
});

t.test('a long request head reaches the pipeline; one over MAX_REQUEST_HEAD_BYTES is answered 431 by uWS', async (t) => {
  const { uws } = loadNativeUws();
  t.equal(process.env.UWS_HTTP_MAX_HEADERS_SIZE, String(MAX_REQUEST_HEAD_BYTES));
  const app = uws.App().any('/*', (res, req) => {
    res.end(String(req.getUrl().length));
  });
  const port = await new Promise<number>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (s) => (s ? resolve(uws.us_socket_local_port(s)) : reject(new Error('listen')))),
  );
  // uWS's own default (4 KB) answered this 431 with its HTML page
  const long = await fetch(`http://127.0.0.1:${port}/${'a'.repeat(20_000)}`);
  t.equal(long.status, 200);
  t.equal(await long.text(), '20001');
  const over = await fetch(`http://127.0.0.1:${port}/${'a'.repeat(MAX_REQUEST_HEAD_BYTES + 100)}`);
  t.equal(over.status, 431);
  await over.arrayBuffer();
  app.close();
});
