// The converter's one wall check, after the fetch and before any conversion: a bot challenge, a
// CAPTCHA or a login wall fails every output of the job with `blocked` / `login_required` and
// `extra.evidence` (refunded as every failed result). The signatures: shared/crawl/wall-signatures.ts.
import { detectWall } from '../../shared/crawl/walls.ts';
import type { GuardedResponse } from '../../shared/outbound/index.ts';

export function wallFailure(
  res: Pick<GuardedResponse, 'status' | 'headers' | 'body'>,
): { error: string; message: string; extra: { evidence: { status: number; title: string; signature: string } } } | null {
  const wall = detectWall({
    status: res.status,
    headers: res.headers,
    body: res.body,
    contentType: String(res.headers['content-type'] ?? ''),
  });
  return wall ? { error: wall.error, message: wall.message, extra: { evidence: wall.evidence } } : null;
}
