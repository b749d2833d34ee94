// A customer's metered features on their page: live balances, credit grants with Void (after a
// confirmation), and a form to grant credits for one of the plan's metered features.
import { ApiError, request } from './api.js';
import { DashboardCreateCreditGrant, DashboardMetering, DashboardVoidCreditGrant } from './operations.js';
import { ConfirmButton, ErrorMessage, Field, formatDate, html, Loading, Notice, useLoad } from './ui.js';
import { useState } from './vendor/hooks.js';

const EMPTY_FORM = { feature: '', amount: '', priority: '', expiresAt: '', description: '' };

/** A whole number typed in a field, or the text itself when it is not one (the API then names the problem). */
function wholeNumber(text) {
  const trimmed = text.trim();
  return /^-?\d+$/.test(trimmed) ? Number(trimmed) : trimmed;
}

function GrantForm({ appId, customerId, features, onGranted }) {
  const [form, setForm] = useState({ ...EMPTY_FORM, feature: features[0] });
  const [errors, setErrors] = useState({});
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  const text = (field) => (e) => setForm((f) => ({ ...f, [field]: e.currentTarget.value }));
  const submit = async (event) => {
    event.preventDefault();
    setErrors({});
    setError(undefined);
    const amount = wholeNumber(form.amount);
    const priority = form.priority.trim() === '' ? undefined : wholeNumber(form.priority);
    const local = {};
    if (typeof amount !== 'number') local.amount = 'a whole number of units, e.g. 100';
    if (priority !== undefined && typeof priority !== 'number')
      local.priority = 'a whole number from 0 to 100';
    let expiresAt;
    if (form.expiresAt !== '') {
      // datetime-local is the browser's local time; the API takes an instant.
      const when = new Date(form.expiresAt);
      if (Number.isNaN(when.getTime())) local.expiresAt = 'a date and time';
      else expiresAt = when.toISOString();
    }
    if (Object.keys(local).length > 0) {
      setErrors(local);
      return;
    }
    const input = { customerId, feature: form.feature, amount };
    if (priority !== undefined) input.priority = priority;
    if (expiresAt) input.expiresAt = expiresAt;
    if (form.description.trim() !== '') input.description = form.description.trim();
    setBusy(true);
    try {
      const { createCreditGrant } = await request(DashboardCreateCreditGrant, { appId, input });
      setForm({ ...EMPTY_FORM, feature: form.feature });
      onGranted(
        `Granted ${createCreditGrant.amount} ${createCreditGrant.feature} (${createCreditGrant.id}).`,
      );
    } catch (e) {
      const byField = e instanceof ApiError ? e.fieldErrors() : {};
      setErrors(byField);
      if (Object.keys(byField).length === 0) setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="grant-form" onSubmit=${submit} novalidate aria-labelledby="grant-form-title">
    <h4 id="grant-form-title">Grant credits</h4>
    <div class="grant-fields">
      <${Field} label="Feature" error=${errors.feature}>
        ${(p) => html`<select ...${p} value=${form.feature} onChange=${text('feature')}>
          ${features.map((f) => html`<option key=${f} value=${f}>${f}</option>`)}
        </select>`}
      <//>
      <${Field} label="Amount" error=${errors.amount}>
        ${(p) => html`<input ...${p} type="number" inputmode="numeric" min="1" step="1" required value=${form.amount} onInput=${text('amount')} />`}
      <//>
      <${Field} label="Priority" error=${errors.priority} hint="0–100, lower is spent first; empty: 50.">
        ${(p) => html`<input ...${p} type="number" inputmode="numeric" min="0" max="100" step="1" value=${form.priority} onInput=${text('priority')} />`}
      <//>
      <${Field} label="Expires" error=${errors.expiresAt} hint="Your local time; empty: never.">
        ${(p) => html`<input ...${p} type="datetime-local" value=${form.expiresAt} onInput=${text('expiresAt')} />`}
      <//>
    </div>
    <${Field} label="Description" error=${errors.description}>
      ${(p) => html`<input ...${p} type="text" value=${form.description} onInput=${text('description')} />`}
    <//>
    <${ErrorMessage} error=${error} />
    <button type="submit" disabled=${busy}>Grant credits</button>
  </form>`;
}

function Grants({ appId, grants, onVoided }) {
  if (grants.length === 0) return html`<p class="empty">No credit grants.</p>`;
  return html`<div class="table-wrap"><table>
    <caption class="visually-hidden">Credit grants</caption>
    <thead><tr><th scope="col">Feature</th><th scope="col">Amount</th><th scope="col">Remaining</th><th scope="col">Priority</th><th scope="col">Expires</th><th scope="col">Description</th><th scope="col">Voided</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>${grants.map(
      (g) => html`<tr key=${g.id} data-grant=${g.id}>
        <td data-label="Feature">${g.feature} <code>${g.id}</code></td>
        <td data-label="Amount">${g.amount}</td>
        <td data-label="Remaining">${g.remaining}</td>
        <td data-label="Priority">${g.priority}</td>
        <td data-label="Expires">${g.expiresAt ? formatDate(g.expiresAt) : 'never'}</td>
        <td data-label="Description">${g.description ?? '—'}</td>
        <td data-label="Voided">${g.voidedAt ? formatDate(g.voidedAt) : '—'}</td>
        <td>${
          g.voidedAt
            ? null
            : html`<${ConfirmButton} label="Void" accessibleLabel=${`Void grant ${g.id}`} confirmLabel="Void grant"
              className="danger" onConfirm=${async () => {
                await request(DashboardVoidCreditGrant, { appId, id: g.id });
                onVoided(`Grant ${g.id} voided.`);
              }}
              question=${`Void this grant of ${g.amount} ${g.feature}? Its unspent ${g.remaining} are removed from the balance now. This cannot be undone.`} />`
        }</td>
      </tr>`,
    )}</tbody>
  </table></div>`;
}

export function Metering({ appId, customerId }) {
  const loaded = useLoad(() => request(DashboardMetering, { appId, customerId }), [appId, customerId]);
  const [changed, setChanged] = useState(undefined);
  const data = loaded.data;
  // Nothing to show for a plan without metered features, unless grants were made under an earlier plan.
  if (data && data.balances.length === 0 && data.creditGrants.length === 0) return null;
  const done = (what) => {
    setChanged(what);
    loaded.reload();
  };
  const features = data?.balances.map((b) => b.feature) ?? [];
  return html`<section class="card" aria-labelledby="balances-title">
    <h3 id="balances-title">Balances</h3>
    ${loaded.loading && !data ? html`<${Loading} what="Loading balances" />` : null}
    <${ErrorMessage} error=${loaded.error} />
    ${changed ? html`<${Notice}>${changed}<//>` : null}
    ${
      data && data.balances.length > 0
        ? html`<div class="table-wrap"><table>
          <caption class="visually-hidden">Balances</caption>
          <thead><tr><th scope="col">Feature</th><th scope="col">Limit</th><th scope="col">Granted</th><th scope="col">Used</th><th scope="col">Remaining</th><th scope="col">Overage</th><th scope="col">Resets at</th></tr></thead>
          <tbody>${data.balances.map(
            (b) => html`<tr key=${b.feature} data-feature=${b.feature}>
              <th scope="row"><code>${b.feature}</code></th>
              <td data-label="Limit" data-column="limit">${b.limit}</td>
              <td data-label="Granted" data-column="granted">${b.granted}</td>
              <td data-label="Used" data-column="used">${b.used}</td>
              <td data-label="Remaining" data-column="remaining">${b.remaining}</td>
              <td data-label="Overage" data-column="overage">${b.overage}</td>
              <td data-label="Resets at">${b.resetsAt ? formatDate(b.resetsAt) : 'never'}</td>
            </tr>`,
          )}</tbody>
        </table></div>`
        : null
    }
    ${
      data
        ? html`<h4>Credit grants</h4>
          <${Grants} appId=${appId} grants=${data.creditGrants} onVoided=${done} />
          ${features.length > 0 ? html`<${GrantForm} appId=${appId} customerId=${customerId} features=${features} onGranted=${done} />` : null}`
        : null
    }
  </section>`;
}
