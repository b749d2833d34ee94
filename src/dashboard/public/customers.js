// Customers of an app: search by e-mail fragment with pages, create one, and one customer's page: edit
// its name and metadata, delete it, its subscriptions (change plan with the proration preview, cancel now
// or at the period end, pause, resume), metered balances and credit grants, invoices, organizations and
// entitlements as the API answers them.
import { request } from './api.js';
import { Metering } from './metering.js';
import {
  DashboardCancelSubscription,
  DashboardChangePlan,
  DashboardCreateCustomer,
  DashboardCustomer,
  DashboardCustomers,
  DashboardDeleteCustomer,
  DashboardInvoices,
  DashboardOrganizations,
  DashboardPauseSubscription,
  DashboardPlans,
  DashboardPreviewPlanChange,
  DashboardResumeSubscription,
  DashboardUpdateCustomer,
} from './operations.js';
import {
  ConfirmButton,
  ErrorMessage,
  Field,
  formatDate,
  formatMoney,
  formatValue,
  html,
  invalid,
  Loading,
  Notice,
  priceText,
  useLoad,
  useSubmit,
} from './ui.js';
import { useState } from './vendor/hooks.js';

const customerHref = (appId, id) =>
  `#/apps/${encodeURIComponent(appId)}/customers${id ? `/${encodeURIComponent(id)}` : ''}`;

function NewCustomer({ appId, onClose }) {
  const [form, setForm] = useState({ email: '', name: '' });
  const text = (field) => (e) => setForm((f) => ({ ...f, [field]: e.currentTarget.value }));
  const { busy, errors, error, submit } = useSubmit(async () => {
    const input = { email: form.email.trim() };
    if (form.name.trim()) input.name = form.name.trim();
    const { createCustomer } = await request(DashboardCreateCustomer, { appId, input });
    location.hash = customerHref(appId, createCustomer.id);
  });
  return html`<form class="card" onSubmit=${submit} novalidate aria-labelledby="new-customer-title">
    <h3 id="new-customer-title">New customer</h3>
    <${Field} label="E-mail" error=${errors.email}>
      ${(p) => html`<input ...${p} type="email" spellcheck="false" value=${form.email} onInput=${text('email')} />`}
    <//>
    <${Field} label="Name" error=${errors.name}>
      ${(p) => html`<input ...${p} type="text" value=${form.name} onInput=${text('name')} />`}
    <//>
    <${ErrorMessage} error=${error} />
    <div class="actions">
      <button type="submit" disabled=${busy}>Create customer</button>
      <button type="button" class="secondary" onClick=${onClose}>Close</button>
    </div>
  </form>`;
}

const PAGE_SIZE = 20;

export function CustomersTab({ appId }) {
  const [draft, setDraft] = useState('');
  const [query, setQuery] = useState({ email: '', offset: 0 });
  const list = useLoad(
    () =>
      request(DashboardCustomers, {
        appId,
        email: query.email || null,
        limit: PAGE_SIZE,
        offset: query.offset,
      }),
    [appId, query.email, query.offset],
  );
  const submit = (event) => {
    event.preventDefault();
    setQuery({ email: draft.trim(), offset: 0 });
  };
  const [creating, setCreating] = useState(false);
  const page = list.data?.customers;
  const total = page?.pagination.total ?? 0;
  return html`<section class="card" aria-labelledby="customers-title">
    <div class="title-row">
      <h2 id="customers-title">Customers</h2>
      ${creating ? null : html`<button type="button" onClick=${() => setCreating(true)}>New customer</button>`}
    </div>
    ${creating ? html`<${NewCustomer} appId=${appId} onClose=${() => setCreating(false)} />` : null}
    <form class="inline" role="search" onSubmit=${submit}>
      <${Field} label="E-mail contains">
        ${(p) => html`<input ...${p} type="search" spellcheck="false" value=${draft} onInput=${(e) => setDraft(e.currentTarget.value)} />`}
      <//>
      <button type="submit">Search</button>
    </form>
    ${list.loading ? html`<${Loading} what="Loading customers" />` : null}
    <${ErrorMessage} error=${list.error} />
    ${
      page && page.data.length === 0
        ? html`<p class="empty">${query.email ? `No customer's e-mail contains “${query.email}”.` : 'No customers yet.'}</p>`
        : null
    }
    ${
      page && page.data.length > 0
        ? html`<div class="table-wrap"><table>
            <caption class="visually-hidden">Customers</caption>
            <thead><tr><th scope="col">E-mail</th><th scope="col">Name</th><th scope="col">Created</th></tr></thead>
            <tbody>
              ${page.data.map(
                (c) => html`<tr key=${c.id}>
                  <td data-label="E-mail"><a href=${customerHref(appId, c.id)}>${c.email}</a></td>
                  <td data-label="Name">${c.name ?? '—'}</td>
                  <td data-label="Created">${formatDate(c.createdAt)}</td>
                </tr>`,
              )}
            </tbody>
          </table></div>
          <nav class="pager" aria-label="Customer pages">
            <button type="button" class="secondary" disabled=${query.offset === 0}
              onClick=${() => setQuery((q) => ({ ...q, offset: Math.max(0, q.offset - PAGE_SIZE) }))}>Previous</button>
            <span>${page.pagination.offset + 1}–${page.pagination.offset + page.data.length} of ${total}</span>
            <button type="button" class="secondary" disabled=${query.offset + PAGE_SIZE >= total}
              onClick=${() => setQuery((q) => ({ ...q, offset: q.offset + PAGE_SIZE }))}>Next</button>
          </nav>`
        : null
    }
  </section>`;
}

function KeyValues({ values, empty }) {
  const entries = Object.entries(values);
  if (entries.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<dl class="pairs">${entries.map(([k, v]) => html`<dt key=${`k-${k}`}><code>${k}</code></dt><dd key=${`v-${k}`}>${formatValue(v)}</dd>`)}</dl>`;
}

function SubscriptionActions({ appId, subscription, onChanged, onChangePlan }) {
  const { id, status, cancelAtPeriodEnd } = subscription;
  const run = (operation, variables) => async () => {
    await request(operation, { appId, id, ...variables });
    onChanged();
  };
  const plan = subscription.plan.name;
  const actions = [];
  const running = status === 'active' || status === 'trialing' || status === 'past_due';
  if (running && !cancelAtPeriodEnd) {
    actions.push(html`<button key="plan" type="button" class="secondary" aria-label=${`Change plan of subscription ${id}`}
      onClick=${() => onChangePlan(subscription)}>Change plan</button>`);
  }
  if (running) {
    actions.push(html`<${ConfirmButton} key="pause" label="Pause" accessibleLabel=${`Pause subscription ${id}`}
      confirmLabel="Pause subscription" onConfirm=${run(DashboardPauseSubscription)}
      question=${`Pause the ${plan} subscription? Collection stops at Stripe and the customer loses the plan's entitlements until it is resumed.`} />`);
  }
  if (status === 'paused' || cancelAtPeriodEnd) {
    actions.push(html`<${ConfirmButton} key="resume" label="Resume" accessibleLabel=${`Resume subscription ${id}`}
      confirmLabel="Resume subscription" onConfirm=${run(DashboardResumeSubscription)}
      question=${`Resume the ${plan} subscription? Collection starts again at Stripe.`} />`);
  }
  if (status !== 'canceled' && status !== 'incomplete_expired') {
    const choices = [{ label: 'Cancel subscription now', run: run(DashboardCancelSubscription) }];
    if (running && !cancelAtPeriodEnd)
      choices.push({
        label: 'Cancel at period end',
        run: run(DashboardCancelSubscription, { atPeriodEnd: true }),
      });
    actions.push(html`<${ConfirmButton} key="cancel" label="Cancel" accessibleLabel=${`Cancel subscription ${id}`}
      confirmLabel="Cancel subscription" className="danger" choices=${choices} dismissLabel="Keep subscription"
      question=${`Cancel the ${plan} subscription now, or at the end of the paid period (${formatDate(subscription.currentPeriodEnd)}), until when it keeps its entitlements? Canceled now, it ends at once. This cannot be undone.`} />`);
  }
  return actions.length > 0 ? html`<span class="actions">${actions}</span>` : null;
}

/** What moving to the chosen plan prorates, as Stripe previews it; then the change itself. */
function ChangePlan({ appId, subscription, onChanged, onClose }) {
  const plans = useLoad(() => request(DashboardPlans, { appId }), [appId]);
  const [planId, setPlanId] = useState('');
  const preview = useLoad(
    () =>
      planId
        ? request(DashboardPreviewPlanChange, { appId, id: subscription.id, planId })
        : Promise.resolve(),
    [planId],
  );
  const { busy, error, submit } = useSubmit(async () => {
    await request(DashboardChangePlan, { appId, id: subscription.id, planId });
    onChanged();
  });
  const targets = (plans.data?.plans ?? []).filter(
    (p) => p.price && !p.archived && p.id !== subscription.plan.id,
  );
  const proration = preview.data?.previewSubscriptionPlanChange;
  return html`<form class="card plan-change" onSubmit=${submit} aria-labelledby="plan-change-title">
    <h4 id="plan-change-title">Change the plan of ${subscription.plan.name} <code>${subscription.id}</code></h4>
    <${Field} label="New plan">
      ${(p) => html`<select ...${p} value=${planId} onChange=${(e) => setPlanId(e.currentTarget.value)}>
        <option value="">Choose a plan</option>
        ${targets.map((t) => html`<option key=${t.id} value=${t.id}>${t.name} · ${priceText(t.price)}</option>`)}
      </select>`}
    <//>
    ${preview.loading && planId ? html`<${Loading} what="Asking Stripe for the proration" />` : null}
    ${
      proration
        ? html`<p class="preview" role="status">${
            proration.amount === 0
              ? 'Nothing is prorated now.'
              : `${proration.amount > 0 ? 'Charged' : 'Credited'} for the rest of this period: ${formatMoney(Math.abs(proration.amount), proration.currency)}.`
          }</p>`
        : null
    }
    <${ErrorMessage} error=${plans.error ?? preview.error ?? error} />
    <div class="actions">
      <button type="submit" disabled=${busy || !proration}>Change plan</button>
      <button type="button" class="secondary" onClick=${onClose}>Close</button>
    </div>
  </form>`;
}

/** Name and metadata; a metadata key removed here is removed by the API (sent as null). */
function EditCustomer({ appId, customer, onSaved, onClose }) {
  const [name, setName] = useState(customer.name ?? '');
  const [rows, setRows] = useState(() =>
    Object.entries(customer.metadata).map(([key, value]) => ({ key, value: JSON.stringify(value) })),
  );
  const update = (index, change) =>
    setRows(rows.map((row, i) => (i === index ? { ...row, ...change } : row)));
  const { busy, errors, error, submit } = useSubmit(async () => {
    const metadata = Object.fromEntries(Object.keys(customer.metadata).map((key) => [key, null]));
    const seen = new Set();
    const problems = [];
    for (const [index, row] of rows.entries()) {
      const key = row.key.trim();
      if (key === '' || seen.has(key))
        problems.push(`row ${index + 1}: ${key ? `${key} appears twice` : 'the key is empty'}`);
      seen.add(key);
      try {
        metadata[key] = JSON.parse(row.value);
      } catch {
        metadata[key] = row.value;
      }
    }
    if (problems.length > 0) throw invalid({ metadata: problems.join('; ') });
    const input = { name: name.trim() === '' ? null : name.trim(), metadata };
    await request(DashboardUpdateCustomer, { appId, id: customer.id, input });
    onSaved();
  });
  return html`<form class="inset-form" onSubmit=${submit} novalidate aria-labelledby="edit-customer-title">
    <h3 id="edit-customer-title">Edit profile</h3>
    <${Field} label="Name" error=${errors.name}>
      ${(p) => html`<input ...${p} type="text" value=${name} onInput=${(e) => setName(e.currentTarget.value)} />`}
    <//>
    <fieldset class="features">
      <legend>Metadata</legend>
      ${rows.map(
        (row, i) => html`<div class="pair-row" key=${i}>
          <input type="text" aria-label=${`Metadata ${i + 1} key`} placeholder="key" value=${row.key} onInput=${(e) => update(i, { key: e.currentTarget.value })} />
          <input type="text" aria-label=${`Metadata ${i + 1} value`} placeholder="value" value=${row.value} onInput=${(e) => update(i, { value: e.currentTarget.value })} />
          <button type="button" class="secondary" aria-label=${`Remove metadata ${i + 1}`} onClick=${() => setRows(rows.filter((_, j) => j !== i))}>Remove</button>
        </div>`,
      )}
      <small class="hint">Values are JSON: 42, true, {"seats": 3}, "text"; anything else is kept as text.</small>
      ${errors.metadata ? html`<small class="field-error">${errors.metadata}</small>` : null}
      <button type="button" class="secondary" onClick=${() => setRows([...rows, { key: '', value: '' }])}>Add metadata</button>
    </fieldset>
    <${ErrorMessage} error=${error} />
    <div class="actions">
      <button type="submit" disabled=${busy}>Save profile</button>
      <button type="button" class="secondary" onClick=${onClose}>Close</button>
    </div>
  </form>`;
}

function Invoices({ appId, customerId }) {
  const invoices = useLoad(() => request(DashboardInvoices, { appId, customerId }), [appId, customerId]);
  return html`<section class="card" aria-labelledby="invoices-title">
    <h2 id="invoices-title">Invoices</h2>
    ${invoices.loading ? html`<${Loading} what="Loading invoices from Stripe" />` : null}
    <${ErrorMessage} error=${invoices.error} />
    ${invoices.data && invoices.data.invoices.length === 0 ? html`<p class="empty">No invoices.</p>` : null}
    ${
      invoices.data && invoices.data.invoices.length > 0
        ? html`<div class="table-wrap"><table>
          <caption class="visually-hidden">Invoices</caption>
          <thead><tr><th scope="col">Date</th><th scope="col">Amount</th><th scope="col">Status</th><th scope="col">Invoice</th></tr></thead>
          <tbody>${invoices.data.invoices.map(
            (i) => html`<tr key=${i.id}>
              <td data-label="Date">${formatDate(i.created)}</td>
              <td data-label="Amount">${formatMoney(i.amountPaid, i.currency)}</td>
              <td data-label="Status">${i.status ?? '—'}</td>
              <td data-label="Invoice">${i.hostedInvoiceUrl ? html`<a href=${i.hostedInvoiceUrl} target="_blank" rel="noopener noreferrer">${i.id}</a>` : i.id}</td>
            </tr>`,
          )}</tbody>
        </table></div>`
        : null
    }
  </section>`;
}

function Organizations({ appId, customerId }) {
  const organizations = useLoad(
    () => request(DashboardOrganizations, { appId, customerId }),
    [appId, customerId],
  );
  const disabled = organizations.error?.code === 'FORBIDDEN';
  return html`<section class="card" aria-labelledby="organizations-title">
    <h2 id="organizations-title">Organizations</h2>
    ${organizations.loading ? html`<${Loading} what="Loading organizations" />` : null}
    ${disabled ? html`<p class="empty">${organizations.error.message}.</p>` : html`<${ErrorMessage} error=${organizations.error} />`}
    ${organizations.data && organizations.data.organizations.length === 0 ? html`<p class="empty">Not a member of any organization.</p>` : null}
    ${
      organizations.data && organizations.data.organizations.length > 0
        ? html`<ul class="plain">${organizations.data.organizations.map(
            (o) =>
              html`<li key=${o.id}><a href=${`#/apps/${encodeURIComponent(appId)}/organizations/${encodeURIComponent(o.id)}`}>${o.name}</a> <code>${o.id}</code></li>`,
          )}</ul>`
        : null
    }
  </section>`;
}

export function CustomerPage({ appId, customerId }) {
  const loaded = useLoad(() => request(DashboardCustomer, { appId, id: customerId }), [appId, customerId]);
  const [changed, setChanged] = useState(undefined);
  const [editing, setEditing] = useState(false);
  const [changing, setChanging] = useState(undefined);
  const back = html`<p><a href=${customerHref(appId)}>← All customers</a></p>`;
  if (loaded.error) return html`<section>${back}<${ErrorMessage} error=${loaded.error} /></section>`;
  if (!loaded.data) return html`<section>${back}<${Loading} what="Loading the customer" /></section>`;
  const { customer, currentSubscription, entitlements } = loaded.data;
  const current = customer.subscriptions.find((s) => s.id === currentSubscription?.id);
  // The editor starts from the profile shown, so it opens only once a reload after a change has
  // brought that profile up to date.
  const onChanged = (what) => () => {
    setChanged(what);
    setEditing(false);
    setChanging(undefined);
    loaded.reload();
  };
  const remove = async () => {
    await request(DashboardDeleteCustomer, { appId, id: customer.id });
    location.hash = customerHref(appId);
  };
  return html`<section aria-labelledby="customer-title">
    ${back}
    <h2 id="customer-title">${customer.email}</h2>
    ${changed ? html`<${Notice}>${changed}<//>` : null}
    <div class="columns">
      <section class="card" aria-labelledby="profile-title">
        <div class="title-row">
          <h3 id="profile-title">Profile</h3>
          <span class="actions">
            <button type="button" class="secondary" disabled=${loaded.loading} onClick=${() => setEditing(true)}>Edit</button>
            <${ConfirmButton} label="Delete" accessibleLabel="Delete customer" confirmLabel="Delete customer" className="danger"
              onConfirm=${remove} dismissLabel="Keep customer"
              question=${`Delete ${customer.email}? Their running subscriptions are canceled at Stripe now, their sessions and memberships end, and their personal data is erased (webhook payloads and stored answers included). This cannot be undone.`} />
          </span>
        </div>
        ${editing ? html`<${EditCustomer} appId=${appId} customer=${customer} onSaved=${onChanged('Profile saved.')} onClose=${() => setEditing(false)} />` : null}
        <dl class="pairs">
          <dt>ID</dt><dd><code>${customer.id}</code></dd>
          <dt>E-mail</dt><dd>${customer.email}</dd>
          <dt>Name</dt><dd>${customer.name ?? '—'}</dd>
          <dt>Stripe customer</dt><dd>${customer.paymentCustomerId ? html`<code>${customer.paymentCustomerId}</code>` : 'not linked'}</dd>
          <dt>Created</dt><dd>${formatDate(customer.createdAt)}</dd>
          <dt>Updated</dt><dd>${formatDate(customer.updatedAt)}</dd>
        </dl>
        <h3>Metadata</h3>
        <${KeyValues} values=${customer.metadata} empty="No metadata." />
      </section>
      <section class="card" aria-labelledby="entitlements-title">
        <h3 id="entitlements-title">Entitlements</h3>
        <p>Plan: <strong>${entitlements.planName ?? 'none'}</strong></p>
        <${KeyValues} values=${entitlements.features} empty="No features." />
      </section>
    </div>
    <section class="card" aria-labelledby="subscription-title">
      <h3 id="subscription-title">Current subscription</h3>
      ${
        current
          ? html`<p><strong>${current.plan.name}</strong> · <span class="status">${current.status}</span>
            ${current.cancelAtPeriodEnd ? ' · cancels at the period end' : ''}
            ${current.currentPeriodEnd ? ` · period ends ${formatDate(current.currentPeriodEnd)}` : ''}</p>`
          : html`<p class="empty">No entitling subscription.</p>`
      }
      <h3>History</h3>
      ${
        customer.subscriptions.length === 0
          ? html`<p class="empty">No subscriptions.</p>`
          : html`<div class="table-wrap"><table>
            <caption class="visually-hidden">Subscription history</caption>
            <thead><tr><th scope="col">Plan</th><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Period end</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${customer.subscriptions.map(
              (s) => html`<tr key=${s.id}>
                <td data-label="Plan">${s.plan.name} <code>${s.id}</code></td>
                <td data-label="Status"><span class="status" data-subscription=${s.id}>${s.status}</span>${s.cancelAtPeriodEnd ? ' (cancels at period end)' : ''}</td>
                <td data-label="Started">${formatDate(s.createdAt)}</td>
                <td data-label="Period end">${formatDate(s.currentPeriodEnd)}</td>
                <td><${SubscriptionActions} appId=${appId} subscription=${s} onChanged=${onChanged(`Subscription ${s.id} changed.`)} onChangePlan=${setChanging} /></td>
              </tr>`,
            )}</tbody>
          </table></div>`
      }
      ${
        changing
          ? html`<${ChangePlan} key=${changing.id} appId=${appId} subscription=${changing}
            onChanged=${onChanged(`Subscription ${changing.id} moved to another plan.`)} onClose=${() => setChanging(undefined)} />`
          : null
      }
    </section>
    <${Metering} appId=${appId} customerId=${customer.id} />
    <${Invoices} appId=${appId} customerId=${customer.id} />
    <${Organizations} appId=${appId} customerId=${customer.id} />
  </section>`;
}
