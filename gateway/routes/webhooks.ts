// The key owner's webhook signing secret (Standard Webhooks `whsec_...`): what a receiver written
// with the `standardwebhooks` package (or any of its ports) needs to verify our deliveries to it.
// Derived, not stored (shared/webhook.ts webhookSecret), so it is the same from every gateway.
import { Type as T } from '@sinclair/typebox';
import type { Route } from '../route.ts';
import { webhookKeyOf, webhookSecret } from '../../shared/webhook.ts';

const WebhookSecret = T.Object(
  {
    secret: T.String({
      description:
        'Standard Webhooks signing secret: `webhook-signature` carries `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` under the base64 bytes after `whsec_`. Only deliveries of this key\'s jobs are signed with it.',
    }),
    publicKey: T.String({
      description: "The deployment's Ed25519 public key (hex), for the `v1a,` signature; the same for every customer.",
    }),
    docs: T.String(),
  },
  { additionalProperties: false },
);

export const routes: Route[] = [
  {
    method: 'GET',
    path: '/v1/webhooks/secret',
    auth: true,
    summary: "This key's webhook signing secret",
    description:
      "The `whsec_...` secret of the Standard Webhooks (standardwebhooks.com) signature on every webhook of this key's jobs. See docs/webhooks.md.",
    tags: ['wallet'],
    responses: { 200: { description: "The secret and the deployment's public key.", schema: WebhookSecret } },
    errors: [],
    async handler(req, ctx) {
      const key = webhookKeyOf(ctx.config);
      return { json: { secret: webhookSecret(key, req.auth!.walletId), publicKey: key.publicKeyHex, docs: 'docs/webhooks.md' } };
    },
  },
];
