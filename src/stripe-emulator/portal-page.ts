import type { Request, Response } from 'express';
import { escapeHtml } from '../core/html.js';
import { PORTAL_SESSION_TTL_S, portalFeatures } from './billing-portal.js';
import { StripeApiError } from './errors.js';
import { now } from './objects.js';
import type { Obj } from './parameters.js';
import { attachPaymentMethod, newCardPaymentMethod } from './payment-methods.js';
import type { Emulation } from './state.js';
import { cancelSubscription, replacePaymentMethod, updateSubscription } from './subscriptions.js';

/**
 * The hosted customer portal a billing portal session's `url` opens: plain server-rendered HTML with
 * forms posting back (no script, no third-party asset). Its actions change the customer's objects
 * through the same functions as the API, so they send the same signed notifications Stripe would:
 * a new card (paying what a declined renewal left open), a cancellation (at period end or at once, as
 * configured) and a switch among the configured prices.
 */

const page = (title: string, body: string): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} — Stripe emulator</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}
section{border-top:1px solid #ddd;margin-top:1.5rem}label{display:block;margin:.5rem 0}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem}.error{color:#b00020}
.notice{color:#0a6b2e}</style></head><body><p><small>Stripe emulator — test mode</small></p>
${body}
</body></html>
`;

const NOT_FOUND = page('Not found', '<p>No such portal session.</p>');
const EXPIRED = page('Expired', '<p>This portal link has expired. Return to the app and open it again.</p>');

const money = (amount: number, currency: string): string =>
  `${(amount / 100).toFixed(2)} ${currency.toUpperCase()}`;

const date = (seconds: number | null): string =>
  seconds ? new Date(seconds * 1000).toISOString().slice(0, 10) : '—';

function priceLabel(em: Emulation, price: Obj): string {
  const product = em.state.products[price.product];
  return `${product?.name ?? price.id} — ${money(price.unit_amount, price.currency)} / ${price.recurring?.interval ?? 'once'}`;
}

/** The session when its link is still usable; otherwise the answer has been sent. */
function openSession(em: Emulation, req: Request, res: Response): Obj | null {
  res.setHeader('cache-control', 'no-store');
  const session = em.state.portalSessions[String(req.params.id)];
  if (!session) {
    res.status(404).type('html').send(NOT_FOUND);
    return null;
  }
  if (session.created + PORTAL_SESSION_TTL_S < now()) {
    res.status(410).type('html').send(EXPIRED);
    return null;
  }
  return session;
}

function render(em: Emulation, session: Obj, message: { error?: string; notice?: string }): string {
  const features = portalFeatures(em, session);
  const customer = em.state.customers[session.customer]!;
  const base = `/portal/${encodeURIComponent(session.id)}`;
  const parts: string[] = [
    `<h1>Billing for ${escapeHtml(customer.email ?? customer.name ?? customer.id)}</h1>`,
  ];
  if (message.error) parts.push(`<p class="error" role="alert">${escapeHtml(message.error)}</p>`);
  if (message.notice) parts.push(`<p class="notice" role="status">${escapeHtml(message.notice)}</p>`);

  const subscriptions = Object.values(em.state.subscriptions).filter(
    (s) => s.customer === customer.id && s.status !== 'canceled' && s.status !== 'incomplete_expired',
  );
  parts.push('<section id="subscriptions"><h2>Subscriptions</h2>');
  if (subscriptions.length === 0) parts.push('<p>No active subscription.</p>');
  const switchable: Obj[] = features.subscription_update.enabled ? features.subscription_update.products : [];
  for (const subscription of subscriptions) {
    const item = subscription.items.data[0];
    const id = escapeHtml(subscription.id);
    parts.push(
      `<article data-subscription="${id}"><h3>${escapeHtml(priceLabel(em, item.price))}</h3>`,
      `<p>Status: <span class="status">${escapeHtml(subscription.status)}</span>` +
        (subscription.cancel_at_period_end
          ? ` — cancels on ${escapeHtml(date(item.current_period_end))}`
          : ` — renews on ${escapeHtml(date(item.current_period_end))}`) +
        '</p>',
    );
    const choices = switchable
      .flatMap((p) => p.prices as string[])
      .filter((priceId) => priceId !== item.price.id && em.state.prices[priceId]);
    if (choices.length > 0) {
      parts.push(
        `<form method="post" action="${base}/subscriptions/${encodeURIComponent(subscription.id)}/update">`,
        '<label>Switch plan<select name="price" required>',
        ...choices.map(
          (priceId) =>
            `<option value="${escapeHtml(priceId)}">${escapeHtml(priceLabel(em, em.state.prices[priceId]!))}</option>`,
        ),
        '</select></label><button type="submit" class="switch">Update plan</button></form>',
      );
    }
    if (features.subscription_cancel.enabled && !subscription.cancel_at_period_end) {
      parts.push(
        `<form method="post" action="${base}/subscriptions/${encodeURIComponent(subscription.id)}/cancel">`,
        `<button type="submit" class="cancel">Cancel subscription${features.subscription_cancel.mode === 'immediately' ? ' now' : ''}</button></form>`,
      );
    }
    parts.push('</article>');
  }
  parts.push('</section>');

  if (features.payment_method_update.enabled) {
    const current = customer.invoice_settings?.default_payment_method;
    parts.push(
      '<section id="payment-method"><h2>Payment method</h2>',
      `<p>${current ? `Card on file: <code>${escapeHtml(current)}</code>` : 'No card on file.'}</p>`,
      `<form method="post" action="${base}/payment-method">`,
      '<label>Card number<input name="card_number" inputmode="numeric" autocomplete="cc-number" required></label>',
      '<p><small>Test cards: 4242 4242 4242 4242 succeeds, 4000 0000 0000 0002 is declined.</small></p>',
      '<button type="submit" id="update-card">Update card</button></form></section>',
    );
  }

  if (features.invoice_history.enabled) {
    const invoices = Object.values(em.state.invoices)
      .filter((i) => i.customer === customer.id)
      .sort((a, b) => b.created - a.created);
    parts.push('<section id="invoices"><h2>Invoices</h2>');
    if (invoices.length === 0) parts.push('<p>No invoices yet.</p>');
    else {
      parts.push(
        '<table><thead><tr><th>Date</th><th>Number</th><th>Amount</th><th>Status</th></tr></thead><tbody>',
      );
      for (const invoice of invoices) {
        parts.push(
          `<tr data-invoice="${escapeHtml(invoice.id)}"><td>${escapeHtml(date(invoice.created))}</td>` +
            `<td>${escapeHtml(String(invoice.number ?? invoice.id))}</td>` +
            `<td>${escapeHtml(money(invoice.total, invoice.currency))}</td>` +
            `<td>${escapeHtml(String(invoice.status))}</td></tr>`,
        );
      }
      parts.push('</tbody></table>');
    }
    parts.push('</section>');
  }
  if (session.return_url) {
    parts.push(`<p><a id="return" href="${escapeHtml(session.return_url)}">Return to the app</a></p>`);
  }
  return page('Customer portal', parts.join('\n'));
}

export function showPortalPage(em: Emulation, req: Request, res: Response): void {
  const session = openSession(em, req, res);
  if (!session) return;
  const notice = typeof req.query.done === 'string' ? NOTICES[req.query.done] : undefined;
  res
    .status(200)
    .type('html')
    .send(render(em, session, notice ? { notice } : {}));
}

const NOTICES: Record<string, string> = {
  card: 'Your card was updated.',
  cancel: 'Your subscription was canceled.',
  update: 'Your plan was updated.',
};

/** Runs one portal action; Stripe API errors become the page with the message (no stack, no internals). */
function act(
  em: Emulation,
  req: Request,
  res: Response,
  action: (session: Obj, form: Record<string, unknown>) => { status: number; error: string } | string,
): void {
  const session = openSession(em, req, res);
  if (!session) return;
  const form = (req.body ?? {}) as Record<string, unknown>;
  let outcome: { status: number; error: string } | string;
  try {
    outcome = action(session, form);
  } catch (error) {
    if (!(error instanceof StripeApiError)) throw error;
    outcome = { status: error.status, error: error.message };
  }
  if (typeof outcome !== 'string') {
    res
      .status(outcome.status)
      .type('html')
      .send(render(em, session, { error: outcome.error }));
    return;
  }
  em.save();
  res.redirect(303, `/portal/${encodeURIComponent(session.id)}?done=${outcome}`);
}

/** The customer's own subscription, else null (another customer's is as absent as an unknown one). */
function ownSubscription(em: Emulation, session: Obj, id: string): Obj | null {
  const subscription = em.state.subscriptions[id];
  return subscription && subscription.customer === session.customer ? subscription : null;
}

export function submitPortalCard(em: Emulation, req: Request, res: Response): void {
  act(em, req, res, (session, form) => {
    if (!portalFeatures(em, session).payment_method_update.enabled)
      return { status: 403, error: 'Updating the payment method is not enabled.' };
    const card = String(form.card_number ?? '').replace(/[\s-]/g, '');
    if (!/^\d{12,19}$/.test(card)) return { status: 400, error: 'Your card number is incomplete.' };
    if (card === '4000000000000002') return { status: 402, error: 'Your card was declined.' };
    const customer = em.state.customers[session.customer]!;
    const paymentMethod = newCardPaymentMethod(em, card, { email: customer.email, name: customer.name }).id;
    attachPaymentMethod(em, paymentMethod, customer.id);
    customer.invoice_settings.default_payment_method = paymentMethod;
    em.emit('customer.updated', customer, {
      invoice_settings: { ...customer.invoice_settings, default_payment_method: null },
    });
    for (const subscription of Object.values(em.state.subscriptions)) {
      if (subscription.customer !== customer.id || subscription.status === 'canceled') continue;
      replacePaymentMethod(em, subscription.id, paymentMethod);
    }
    return 'card';
  });
}

export function submitPortalCancel(em: Emulation, req: Request, res: Response): void {
  act(em, req, res, (session) => {
    const features = portalFeatures(em, session);
    if (!features.subscription_cancel.enabled) return { status: 403, error: 'Canceling is not enabled.' };
    const subscription = ownSubscription(em, session, String(req.params.subscription));
    if (!subscription) return { status: 404, error: 'No such subscription.' };
    if (features.subscription_cancel.mode === 'immediately') cancelSubscription(em, subscription.id, {});
    else updateSubscription(em, subscription.id, { cancel_at_period_end: 'true' });
    return 'cancel';
  });
}

export function submitPortalUpdate(em: Emulation, req: Request, res: Response): void {
  act(em, req, res, (session, form) => {
    const update = portalFeatures(em, session).subscription_update;
    if (!update.enabled) return { status: 403, error: 'Changing the plan is not enabled.' };
    const subscription = ownSubscription(em, session, String(req.params.subscription));
    if (!subscription) return { status: 404, error: 'No such subscription.' };
    const priceId = String(form.price ?? '');
    const offered = (update.products as Obj[]).some((p) => (p.prices as string[]).includes(priceId));
    if (!offered) return { status: 400, error: 'That plan is not offered here.' };
    updateSubscription(em, subscription.id, {
      items: [{ id: subscription.items.data[0].id, price: priceId }],
      proration_behavior: update.proration_behavior,
    });
    return 'update';
  });
}
