// `payloads convert` without --out prints a text output to stdout; a download the API refuses (here
// 410 expired) is an error with the API's code and a non-zero exit, not the error body printed as
// if it were the page. The API is a local HTTP server answering as the gateway does.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runCli } from './run-cli.ts';

t.test('convert to stdout: a refused download exits non-zero with the code, prints no page', async (t) => {
  let base = '';
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.method === 'POST' && req.url?.startsWith('/v1/websitepro/jobs')) {
      res.statusCode = 201;
      return res.end(
        JSON.stringify({
          balance: 980,
          job: {
            id: 'job_x',
            service: 'websitepro',
            status: 'completed',
            target: 'example.com',
            cost: 20,
            refunded: 0,
            charged: 20,
            createdAt: 1,
            finishedAt: 2,
            expiresAt: 3,
            results: [
              {
                key: 'text',
                status: 'done',
                price: 20,
                refunded: false,
                url: `${base}/v1/jobs/job_x/results/text`,
                contentType: 'text/plain',
                bytes: 5,
                filename: 'text.txt',
              },
            ],
          },
        }),
      );
    }
    if (req.url === '/v1/jobs/job_x/results/text') {
      res.statusCode = 410;
      return res.end(JSON.stringify({ error: { code: 'expired', message: 'the results of this job were deleted' } }));
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ error: { code: 'not_found', message: 'no such route' } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const r = await runCli(['convert', 'https://example.com/', '--text'], { PAYLOADS_URL: base, PAYLOADS_KEY: 'pk_test' });
  t.not(r.code, 0, `exit code ${r.code}`);
  t.match(r.stderr, /expired/);
  t.notMatch(r.stdout, /error|deleted/, 'the error body is not printed as the page');
});
