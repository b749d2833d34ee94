import { escapeHtml } from '../core/html.js';
/** The emulator's hosted checkout page: plain HTML, no script, so it works in any browser or test client. */

export interface CheckoutPageView {
  readonly sessionId: string;
  readonly productName: string;
  readonly amountLabel: string;
  readonly trialDays: number;
  readonly discountLabel: string | null;
  readonly email: string | null;
  readonly askEmail: boolean;
  readonly askCard: boolean;
  readonly askAddress: boolean;
  readonly cancelUrl: string | null;
  readonly error: string | null;
  readonly closedReason: string | null;
}

const field = (name: string, label: string, attrs = 'required'): string =>
  `<label>${escapeHtml(label)}<input name="${name}" ${attrs}></label>`;

export function renderCheckoutPage(view: CheckoutPageView): string {
  const parts: string[] = [];
  parts.push(
    `<h1>${escapeHtml(view.productName)}</h1>`,
    `<p class="amount">${escapeHtml(view.amountLabel)}</p>`,
  );
  if (view.trialDays > 0) parts.push(`<p class="trial">${view.trialDays}-day free trial</p>`);
  if (view.discountLabel) parts.push(`<p class="discount">Discount: ${escapeHtml(view.discountLabel)}</p>`);
  if (view.error) parts.push(`<p class="error" role="alert">${escapeHtml(view.error)}</p>`);
  if (view.closedReason) {
    parts.push(`<p class="closed">${escapeHtml(view.closedReason)}</p>`);
  } else {
    const fields: string[] = [];
    if (view.askEmail) fields.push(field('email', 'Email', 'type="email" required'));
    else if (view.email) fields.push(`<p class="email">${escapeHtml(view.email)}</p>`);
    fields.push(field('name', 'Name on card', view.askAddress ? 'required' : ''));
    if (view.askCard) {
      fields.push(
        field('card_number', 'Card number', 'inputmode="numeric" autocomplete="cc-number" required'),
        '<p class="hint">Test cards: 4242 4242 4242 4242 succeeds, 4000 0000 0000 0002 is declined.</p>',
      );
    }
    if (view.askAddress) {
      fields.push(
        '<fieldset><legend>Billing address</legend>',
        field('address_line1', 'Address'),
        field('address_city', 'City'),
        field('address_postal_code', 'Postal code'),
        field('address_country', 'Country (2 letters)', 'required maxlength="2"'),
        '</fieldset>',
      );
    }
    parts.push(
      `<form method="post" action="/checkout/${encodeURIComponent(view.sessionId)}/pay">`,
      ...fields,
      `<button type="submit" id="pay">${view.trialDays > 0 ? 'Start trial' : 'Pay'}</button>`,
      '</form>',
    );
  }
  if (view.cancelUrl && !view.closedReason) {
    parts.push(`<p><a id="cancel" href="${escapeHtml(view.cancelUrl)}">Cancel and return</a></p>`);
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Checkout — Stripe emulator</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:2rem auto;padding:0 1rem}
label{display:block;margin:.5rem 0}input{display:block;width:100%;padding:.4rem;box-sizing:border-box}
button{margin-top:1rem;padding:.6rem 1.2rem}.error{color:#b00020}.hint{font-size:.8rem;color:#555}</style>
</head><body><p><small>Stripe emulator — test mode</small></p>
${parts.join('\n')}
</body></html>
`;
}
