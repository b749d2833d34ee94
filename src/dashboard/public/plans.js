// Plans of an app: list with their price, create and edit (features as typed key/value rows, the price
// picked by id or created at Stripe from an amount), archive.
import { ApiError, request } from './api.js';
import { DashboardCreatePlanPrice, DashboardPlans, DashboardUpsertPlan } from './operations.js';
import {
  Checkbox,
  ConfirmButton,
  ErrorMessage,
  Field,
  formatValue,
  html,
  Loading,
  Notice,
  priceText,
  useLoad,
} from './ui.js';
import { useState } from './vendor/hooks.js';

function typeOf(value) {
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'number') return 'number';
  return 'text';
}

function rowsOf(features) {
  return Object.entries(features)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => ({ key, type: typeOf(value), value: String(value) }));
}

/** The features object the API takes, or the problems of the rows that cannot become one. */
function featuresOf(rows) {
  const features = {};
  const problems = [];
  for (const [index, row] of rows.entries()) {
    const key = row.key.trim();
    const number = Number(row.value);
    if (key === '') problems.push(`feature ${index + 1}: the key is empty`);
    else if (Object.hasOwn(features, key)) problems.push(`feature ${index + 1}: ${key} appears twice`);
    else if (row.type === 'boolean') features[key] = row.value === 'true';
    else if (row.type !== 'number') features[key] = row.value;
    else if (row.value.trim() === '' || !Number.isFinite(number))
      problems.push(`feature ${index + 1}: ${key} must be a number`);
    else features[key] = number;
  }
  return { features, problems };
}

function FeatureRows({ rows, setRows, error }) {
  const update = (index, change) =>
    setRows(rows.map((row, i) => (i === index ? { ...row, ...change } : row)));
  return html`<fieldset class="features">
    <legend>Features</legend>
    ${rows.length === 0 ? html`<p class="empty">No features.</p>` : null}
    ${rows.map((row, index) => {
      const n = index + 1;
      return html`<div class="feature-row" key=${index}>
        <input type="text" aria-label=${`Feature ${n} key`} placeholder="key" value=${row.key}
          onInput=${(e) => update(index, { key: e.currentTarget.value })} />
        <select aria-label=${`Feature ${n} type`} value=${row.type}
          onChange=${(e) => update(index, { type: e.currentTarget.value, value: e.currentTarget.value === 'boolean' ? 'true' : '' })}>
          <option value="boolean">yes/no</option>
          <option value="number">number</option>
          <option value="text">text</option>
        </select>
        ${
          row.type === 'boolean'
            ? html`<select aria-label=${`Feature ${n} value`} value=${row.value} onChange=${(e) => update(index, { value: e.currentTarget.value })}>
              <option value="true">true</option>
              <option value="false">false</option>
            </select>`
            : html`<input type=${row.type === 'number' ? 'number' : 'text'} aria-label=${`Feature ${n} value`} value=${row.value}
              onInput=${(e) => update(index, { value: e.currentTarget.value })} />`
        }
        <button type="button" class="secondary" aria-label=${`Remove feature ${n}`}
          onClick=${() => setRows(rows.filter((_, i) => i !== index))}>Remove</button>
      </div>`;
    })}
    ${error ? html`<small class="field-error">${error}</small>` : null}
    <button type="button" class="secondary" onClick=${() => setRows([...rows, { key: '', type: 'boolean', value: 'true' }])}>Add feature</button>
  </fieldset>`;
}

function PlanForm({ appId, plan, onDone, onCancel }) {
  const editing = plan !== undefined;
  const [form, setForm] = useState(() => ({
    id: plan?.id ?? '',
    name: plan?.name ?? '',
    stripePriceId: plan?.stripePriceId ?? '',
    trialDays: String(plan?.trialDays ?? 0),
    isDefault: plan?.isDefault ?? false,
    amount: '',
    currency: 'usd',
    interval: 'month',
  }));
  const [rows, setRows] = useState(() => rowsOf(plan?.features ?? {}));
  const [errors, setErrors] = useState({});
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  const text = (field) => (e) => setForm((f) => ({ ...f, [field]: e.currentTarget.value }));
  const submit = async (event) => {
    event.preventDefault();
    setError(undefined);
    const { features, problems } = featuresOf(rows);
    const local = {};
    if (problems.length > 0) local.features = problems.join('; ');
    const trialDays = Number(form.trialDays);
    if (form.trialDays.trim() === '' || !Number.isInteger(trialDays))
      local.trialDays = 'must be a whole number of days';
    const amount = form.amount.trim();
    if (amount !== '' && !/^\d{1,6}(\.\d{1,2})?$/.test(amount))
      local.amount = 'must be an amount such as 19 or 19.90';
    else if (amount !== '' && form.stripePriceId.trim() !== '')
      local.amount = 'give either a Stripe price or an amount, not both';
    setErrors(local);
    if (Object.keys(local).length > 0) return;
    const input = {
      id: form.id.trim(),
      name: form.name,
      stripePriceId: form.stripePriceId.trim() === '' ? null : form.stripePriceId.trim(),
      trialDays,
      features,
      isDefault: form.isDefault,
    };
    setBusy(true);
    try {
      if (amount !== '') {
        const { createPlanPrice } = await request(DashboardCreatePlanPrice, {
          input: {
            productName: form.name.trim() || input.id,
            unitAmount: Math.round(Number(amount) * 100),
            currency: form.currency.trim().toLowerCase(),
            interval: form.interval,
          },
        });
        // Kept in the form: saving again after a refusal reuses this price instead of making another.
        input.stripePriceId = createPlanPrice.id;
        setForm((f) => ({ ...f, stripePriceId: createPlanPrice.id, amount: '' }));
      }
      await request(DashboardUpsertPlan, { appId, input });
      onDone(input.id);
    } catch (e) {
      const byField = e instanceof ApiError ? e.fieldErrors() : {};
      const featureErrors = Object.entries(byField).filter(([f]) => f.startsWith('features'));
      if (featureErrors.length > 0) byField.features = featureErrors.map(([f, m]) => `${f}: ${m}`).join('; ');
      setErrors(byField);
      if (Object.keys(byField).length === 0) setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card" onSubmit=${submit} novalidate aria-labelledby="plan-form-title">
    <h3 id="plan-form-title">${editing ? `Edit plan ${plan.id}` : 'New plan'}</h3>
    <${Field} label="Plan ID" error=${errors.id} hint="Lowercase letters, digits, - and _ (e.g. pro). It cannot change later.">
      ${(p) => html`<input ...${p} type="text" spellcheck="false" readonly=${editing} value=${form.id} onInput=${text('id')} />`}
    <//>
    <${Field} label="Plan name" error=${errors.name}>
      ${(p) => html`<input ...${p} type="text" value=${form.name} onInput=${text('name')} />`}
    <//>
    <${Field} label="Stripe price" error=${errors.stripePriceId} hint="A Stripe price id (price_…), or an amount below to create one; both empty for a free plan.">
      ${(p) => html`<input ...${p} type="text" spellcheck="false" value=${form.stripePriceId} onInput=${text('stripePriceId')} />`}
    <//>
    <div class="grant-fields">
      <${Field} label="Amount" error=${errors.amount ?? errors.unitAmount} hint="Creates a recurring price at Stripe, e.g. 19.90.">
        ${(p) => html`<input ...${p} type="text" inputmode="decimal" value=${form.amount} onInput=${text('amount')} />`}
      <//>
      <${Field} label="Currency" error=${errors.currency}>
        ${(p) => html`<input ...${p} type="text" maxlength="3" value=${form.currency} onInput=${text('currency')} />`}
      <//>
      <${Field} label="Billing interval" error=${errors.interval}>
        ${(p) => html`<select ...${p} value=${form.interval} onChange=${text('interval')}>
          ${['day', 'week', 'month', 'year'].map((i) => html`<option key=${i} value=${i}>${i}</option>`)}
        </select>`}
      <//>
    </div>
    <${Field} label="Trial days" error=${errors.trialDays}>
      ${(p) => html`<input ...${p} type="number" min="0" value=${form.trialDays} onInput=${text('trialDays')} />`}
    <//>
    <${FeatureRows} rows=${rows} setRows=${setRows} error=${errors.features} />
    <${Checkbox} label="Default plan" checked=${form.isDefault} error=${errors.isDefault}
      onChange=${(value) => setForm((f) => ({ ...f, isDefault: value }))} />
    <${ErrorMessage} error=${error} />
    <div class="actions">
      <button type="submit" disabled=${busy}>Save plan</button>
      <button type="button" class="secondary" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}

export function PlansTab({ appId, readOnly }) {
  const plans = useLoad(() => request(DashboardPlans, { appId }), [appId]);
  const [editing, setEditing] = useState(null);
  const [saved, setSaved] = useState(undefined);
  const done = (id, what = 'saved') => {
    setEditing(null);
    setSaved(`Plan ${id} ${what}.`);
    plans.reload();
  };
  const archive = (plan, archived) => async () => {
    await request(DashboardUpsertPlan, { appId, input: { id: plan.id, name: plan.name, archived } });
    done(plan.id, archived ? 'archived' : 'restored');
  };
  return html`<section class="card" aria-labelledby="plans-title">
    <div class="title-row">
      <h2 id="plans-title">Plans</h2>
      ${
        editing === null && !readOnly
          ? html`<button type="button" onClick=${() => {
              setSaved(undefined);
              setEditing('new');
            }}>New plan</button>`
          : null
      }
    </div>
    ${saved ? html`<${Notice}>${saved}<//>` : null}
    ${
      editing !== null
        ? html`<${PlanForm} key=${editing === 'new' ? 'new' : editing.id} appId=${appId}
          plan=${editing === 'new' ? undefined : editing} onDone=${done} onCancel=${() => setEditing(null)} />`
        : null
    }
    ${plans.loading && !plans.data ? html`<${Loading} what="Loading plans" />` : null}
    <${ErrorMessage} error=${plans.error} />
    ${plans.data && plans.data.plans.length === 0 ? html`<p class="empty">No plans yet.</p>` : null}
    ${
      plans.data && plans.data.plans.length > 0
        ? html`<div class="table-wrap"><table>
          <caption class="visually-hidden">Plans</caption>
          <thead><tr><th scope="col">Plan</th><th scope="col">Price</th><th scope="col">Trial days</th><th scope="col">Features</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            ${plans.data.plans.map(
              (plan) => html`<tr key=${plan.id} data-plan=${plan.id}>
                <td data-label="Plan">${plan.name}<br /><code>${plan.id}</code></td>
                <td data-label="Price">${plan.stripePriceId ? html`${plan.price ? priceText(plan.price) : 'not found at Stripe'}<br /><code>${plan.stripePriceId}</code>` : 'free'}</td>
                <td data-label="Trial days">${plan.trialDays}</td>
                <td data-label="Features">${
                  Object.keys(plan.features).length === 0
                    ? '—'
                    : html`<ul class="plain">${Object.entries(plan.features).map(([k, v]) => html`<li key=${k}><code>${k}</code>: ${formatValue(v)}</li>`)}</ul>`
                }</td>
                <td data-label="Status">${[plan.isDefault && 'default', plan.archived && 'archived'].filter(Boolean).join(', ')}</td>
                <td>${
                  readOnly
                    ? null
                    : html`<span class="actions"><button type="button" class="secondary" aria-label=${`Edit plan ${plan.id}`} disabled=${plans.loading}
                  onClick=${() => {
                    setSaved(undefined);
                    setEditing(plan);
                  }}>Edit</button>
                  ${
                    plan.archived
                      ? html`<button type="button" class="secondary" aria-label=${`Restore plan ${plan.id}`} onClick=${archive(plan, false)}>Restore</button>`
                      : html`<${ConfirmButton} label="Archive" accessibleLabel=${`Archive plan ${plan.id}`} confirmLabel="Archive plan"
                        onConfirm=${archive(plan, true)} dismissLabel="Keep selling it"
                        question=${`Archive ${plan.name}? Checkout and plan changes refuse it from now on; subscriptions already on it keep it.`} />`
                  }</span>`
                }</td>
              </tr>`,
            )}
          </tbody>
        </table></div>`
        : null
    }
  </section>`;
}
