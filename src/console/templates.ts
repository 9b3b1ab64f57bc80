/*
 * The console's Eta templates (https://eta.js.org), kept in a TypeScript module so that the build carries them
 * into dist/ with the code. `it` is the page's data, `it.h` the helpers of console-views.ts. `<%= %>` escapes.
 */

const layout = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title><%= it.title %> · Billing console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/assets/console.css">
<% if (it.refresh) { %>
<meta http-equiv="refresh" content="0; url=<%= it.refresh %>">
<% } %>
<% if (it.chart) { %>
<script src="/console/assets/chart.umd.min.js" defer></script>
<script src="/console/assets/console.js" defer></script>
<% } %>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/console">Billing console</a>
<% if (it.operator) { %>
  <nav aria-label="Console">
    <ul>
<% for (const item of it.h.nav) { %>
      <li><a href="<%= item.href %>"<% if (item.section === it.section) { %> aria-current="page"<% } %>><%= item.label %></a></li>
<% } %>
    </ul>
  </nav>
  <form class="sign-out" method="post" action="/console/sign-out">
    <input type="hidden" name="_csrf" value="<%= it.operator.csrfToken %>">
    <span class="who"><%= it.operator.email %></span>
    <button type="submit">Sign out</button>
  </form>
<% } %>
</header>
<main id="main" tabindex="-1">
<h1><%= it.title %></h1>
<% if (it.flash) { %>
<div class="flash flash-<%= it.flash.kind %>" role="<%= it.flash.kind === 'refused' ? 'alert' : 'status' %>"><%= it.flash.text %></div>
<% } %>
<%~ it.body %>
</main>
</body>
</html>
`;

const signIn = String.raw`<% layout('@layout') %>
<% if (it.problem) { %>
<p class="flash flash-refused" role="alert"><%= it.problem %></p>
<% } %>
<% if (it.provider) { %>
<p>The console is for the people who run this service. Sign in with your company account:</p>
<p><a class="button primary" href="/console/oidc/start">Sign in with <%= it.provider %></a></p>
<p>You stay signed in for 12 hours. Without access to the provider, a one-time link from a machine with access
to the service's configuration works too:</p>
<pre><code>npm run -s cli -- console:link --email you@example.com</code></pre>
<% } else { %>
<p>The console is for the people who run this service. To sign in, ask for a one-time link on a machine
with access to the service's configuration:</p>
<pre><code>npm run -s cli -- console:link --email you@example.com</code></pre>
<p>The link works once, for 15 minutes unless <code>--ttl-minutes</code> says otherwise, and keeps you signed in for 12 hours.</p>
<% } %>
`;

// After the OpenID provider's callback: moves on to the console by itself (a meta refresh; CSP allows no script).
const signedIn = String.raw`<% layout('@layout') %>
<p>You are signed in. <a href="/console">Continue to the console</a>.</p>
`;

// After signing out of a session made through the OpenID provider: moves on to the provider's end-session
// endpoint by itself (a meta refresh: form-action 'self' would block a redirect after the sign-out's form post).
const signedOut = String.raw`<% layout('@layout') %>
<p>You are signed out of the console. <a href="<%= it.refresh %>">Sign out at <%= it.provider %> too</a>.</p>
`;

const link = String.raw`<% layout('@layout') %>
<p>This one-time link signs you in to the billing console. It works once.</p>
<form method="post" action="/console/sign-in/link">
  <input type="hidden" name="token" value="<%= it.token %>">
  <button type="submit" class="primary">Sign in</button>
</form>
`;

const error = String.raw`<% layout('@layout') %>
<p class="flash flash-refused" role="alert"><%= it.message %></p>
<% if (it.requestId) { %><p>Request id: <code><%= it.requestId %></code></p><% } %>
<p><a href="/console">Back to the overview</a></p>
`;

const overview = String.raw`<% layout('@layout') %>
<section aria-labelledby="orgs-heading">
  <h2 id="orgs-heading">Organisations</h2>
  <div class="cards">
    <div class="card"><span class="figure"><%= it.o.organisations %></span> organisations</div>
<% for (const row of it.o.byTier) { %>
    <div class="card"><span class="figure"><%= row.count %></span> on <%= row.tier %></div>
<% } %>
  </div>
  <h3>Subscriptions by status</h3>
<% if (it.o.byStatus.length) { %>
  <table><thead><tr><th scope="col">Status</th><th scope="col" class="num">Subscriptions</th></tr></thead><tbody>
<% for (const row of it.o.byStatus) { %>
    <tr><td><span class="badge badge-<%= row.status %>"><%= row.status %></span></td><td class="num"><%= row.count %></td></tr>
<% } %>
  </tbody></table>
<% } else { %><p>No subscriptions yet.</p><% } %>
</section>
<section aria-labelledby="day-heading">
  <h2 id="day-heading">The last 24 hours</h2>
  <div class="cards">
    <div class="card"><span class="figure"><%= it.o.events %></span> webhook events</div>
    <div class="card"><a href="/console/events?status=failed"><span class="figure"><%= it.o.failed %></span> failed</a></div>
    <div class="card"><a href="/console/events?status=unmatched"><span class="figure"><%= it.o.unmatched %></span> unmatched</a></div>
    <div class="card"><a href="/console/notifications?status=pending"><span class="figure"><%= it.o.pendingNotifications %></span> notifications pending</a></div>
    <div class="card"><a href="/console/notifications?status=failed"><span class="figure"><%= it.o.failedNotifications %></span> notifications failed</a></div>
  </div>
  <figure class="chart">
    <canvas id="events-chart" role="img" aria-label="Webhook events per hour over the last 24 hours, by outcome; the same figures are in the table below" data-chart="<%= JSON.stringify(it.o.chart) %>"></canvas>
    <figcaption>Webhook events per hour (UTC), by outcome</figcaption>
  </figure>
  <details>
    <summary>The chart's figures</summary>
    <table><thead><tr><th scope="col">Hour</th>
<% for (const series of it.o.chart.series) { %><th scope="col" class="num"><%= series.label %></th><% } %>
    </tr></thead><tbody>
<% it.o.chart.hours.forEach((hour, i) => { %>
      <tr><td><%= hour %></td><% for (const series of it.o.chart.series) { %><td class="num"><%= series.data[i] %></td><% } %></tr>
<% }) %>
    </tbody></table>
  </details>
</section>
`;


// A POST button: the CSRF token, where to come back to, and a label that names what it acts on.
const action = String.raw`<form class="inline" method="post" action="<%= it.action %>">
<input type="hidden" name="_csrf" value="<%= it.csrf %>">
<% if (it.back) { %><input type="hidden" name="back" value="<%= it.back %>"><% } %>
<button type="submit"<% if (it.label) { %> aria-label="<%= it.label %>"<% } %>><%= it.text %></button>
</form>`;

const eventsTable = String.raw`<% if (!it.rows.length) { %><p>No webhook events<%= it.empty || '' %>.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Webhook events" tabindex="0">
<table>
<thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Received</th><th scope="col">Reason</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>
<% for (const e of it.rows) { %>
<tr>
  <td><a href="/console/events/<%= encodeURIComponent(e.id) %>"><%= e.id %></a></td>
  <td><%= e.type %></td>
  <td><span class="badge badge-<%= e.status %>"><%= e.status %></span></td>
  <td><%= it.h.when(e.receivedAt) %></td>
  <td><%= e.reason || '' %></td>
  <td><% if (it.replayable.includes(e.status)) { %><%~ include('@action', { action: '/console/events/' + encodeURIComponent(e.id) + '/replay', csrf: it.csrf, back: it.back, text: 'Replay', label: 'Replay event ' + e.id }) %><% } %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>`;

const auditTable = String.raw`<% if (!it.rows.length) { %><p>No audit entries.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Audit entries" tabindex="0">
<table>
<thead><tr><th scope="col">When</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Organisation</th><th scope="col">Change</th></tr></thead>
<tbody>
<% for (const a of it.rows) { %>
<tr>
  <td><%= it.h.when(a.at) %></td>
  <td><%= a.actor %></td>
  <td><%= a.action %></td>
  <td><% if (a.organisation_id) { %><a href="/console/organisations/<%= a.organisation_id %>"><%= a.organisation_id %></a><% } %></td>
  <td><% if (a.before) { %><span class="muted">before</span> <code><%= JSON.stringify(a.before) %></code><br><% } %><% if (a.after) { %><span class="muted">after</span> <code><%= JSON.stringify(a.after) %></code><% } %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>`;

const organisations = String.raw`<% layout('@layout') %>
<form class="filters" method="get" action="/console/organisations" role="search">
  <label for="q">Name, id, external id, member email, customer id or subscription id
    <input type="search" id="q" name="q" value="<%= it.q %>" maxlength="200" autocomplete="off">
  </label>
  <button type="submit" class="primary">Search</button>
</form>
<% if (!it.rows.length) { %><p>No organisation matches<%= it.q ? ' “' + it.q + '”' : '' %>.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Organisations" tabindex="0">
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">External id</th><th scope="col">Customer</th><th scope="col">Created</th></tr></thead>
<tbody>
<% for (const o of it.rows) { %>
<tr>
  <td><a href="/console/organisations/<%= o.id %>"><%= o.name %></a></td>
  <td><code><%= o.id %></code></td>
  <td><%= o.externalId || '' %></td>
  <td><%= o.customerId || '' %></td>
  <td><%= it.h.when(o.createdAt) %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
<nav class="pager" aria-label="Pages">
<% if (it.after) { %><a href="/console/organisations<%= it.h.params({ q: it.q }) %>">First page</a><% } %>
<% if (it.next) { %><a href="/console/organisations<%= it.h.params({ q: it.q, after: it.next }) %>">Next page</a><% } %>
</nav>
`;

const organisation = String.raw`<% layout('@layout') %>
<% const o = it.d.organisation, s = it.d.status; %>
<dl class="facts">
  <dt>Id</dt><dd><code><%= o.id %></code></dd>
  <dt>External id</dt><dd><%= o.externalId || '—' %></dd>
  <dt>Provider customer</dt><dd><%= o.customerId || '—' %></dd>
  <dt>Created</dt><dd><%= it.h.when(o.createdAt) %></dd>
</dl>
<section aria-labelledby="license-heading">
<h2 id="license-heading">License</h2>
<dl class="facts">
  <dt>Tier</dt><dd><strong id="license-tier"><%= s.license.tier %></strong></dd>
  <dt>Active</dt><dd><%= s.license.is_active ? 'yes' : 'no' %></dd>
  <dt>Expired</dt><dd><%= s.license.is_expired ? 'yes' : 'no' %></dd>
</dl>
<h3>Usage</h3>
<dl class="facts">
<% for (const [metric, u] of Object.entries(s.usage)) { %>
  <dt id="usage-<%= metric %>"><%= metric %></dt>
  <dd><meter class="bar" min="0" max="<%= Math.max(u.limit, 1) %>" value="<%= Math.min(u.used, Math.max(u.limit, 1)) %>" aria-labelledby="usage-<%= metric %>"></meter>
      <%= u.used %> of <%= u.limit %> (<%= it.h.percent(u.used, u.limit) %> %)<%= u.at_capacity ? ', at capacity' : '' %></dd>
<% } %>
</dl>
</section>
<section aria-labelledby="entitlements-heading">
<h2 id="entitlements-heading">Entitlements</h2>
<% const ent = it.d.entitlements; %>
<dl class="facts">
<% for (const [feature, on] of Object.entries(ent.features)) { %>
  <dt><%= feature %></dt><dd><%= on ? 'yes' : 'no' %></dd>
<% } %>
<% for (const [metric, l] of Object.entries(ent.limits)) { %>
  <dt><%= metric %> limit</dt><dd><%= l.limit %> (<%= l.source %>, <%= l.overage %> beyond it)</dd>
<% } %>
</dl>
<h3>Overrides</h3>
<% if (!it.d.overrides.length) { %><p>No overrides.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Overrides" tabindex="0">
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Value</th><th scope="col">Expires</th><th scope="col">Note</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>
<% for (const ov of it.d.overrides) { %>
<tr><td><%= ov.name %></td><td><%= String(ov.value) %></td><td><%= ov.expires_at ? it.h.when(ov.expires_at) : 'never' %></td><td><%= ov.note || '' %></td>
<td><%~ include('@action', { action: '/console/organisations/' + o.id + '/overrides/' + encodeURIComponent(ov.name) + '/delete', csrf: it.operator.csrfToken, text: 'Remove', label: 'Remove the override of ' + ov.name }) %></td></tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
<form class="filters" method="post" action="/console/organisations/<%= o.id %>/overrides">
  <input type="hidden" name="_csrf" value="<%= it.operator.csrfToken %>">
  <label for="ov-name">Feature or metric
    <select id="ov-name" name="name">
<% for (const name of [...Object.keys(ent.features), ...Object.keys(ent.limits)]) { %>      <option><%= name %></option>
<% } %>
    </select>
  </label>
  <label for="ov-value">Value (true, false or a limit)<input id="ov-value" name="value" required maxlength="20"></label>
  <label for="ov-expires">Expires (UTC, optional)<input id="ov-expires" name="expires_at" type="datetime-local"></label>
  <label for="ov-note">Note<input id="ov-note" name="note" maxlength="500"></label>
  <button type="submit" class="primary">Set override</button>
</form>
<h3>Why it has this license</h3>
<ol class="explain">
<% for (const step of it.d.explain.because) { %>
  <li><strong><%= step.kind %></strong> <code><%= JSON.stringify(step) %></code></li>
<% } %>
</ol>
</section>
<section aria-labelledby="subs-heading">
<h2 id="subs-heading">Subscriptions</h2>
<% if (!it.d.subscriptions.length) { %><p>No subscriptions.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Subscriptions" tabindex="0">
<table>
<thead><tr><th scope="col">Subscription</th><th scope="col">Tier</th><th scope="col">Status</th><th scope="col" class="num">Seats</th><th scope="col">Trial ends</th><th scope="col">Period</th><th scope="col">Pending change</th></tr></thead>
<tbody>
<% for (const sub of it.d.subscriptions) { %>
<tr>
  <td><code><%= sub.subscriptionId %></code></td>
  <td><%= sub.tier || '—' %><%= sub.interval ? ' (' + sub.interval + ')' : '' %></td>
  <td><span class="badge badge-<%= sub.status %>"><%= sub.status || 'unknown' %></span><%= sub.cancelAtPeriodEnd ? ', cancels at period end' : '' %><%= sub.graceSince ? ', past due since ' + it.h.when(sub.graceSince) + ', grace until ' + it.h.when(sub.graceEndsAt) : '' %></td>
  <td class="num"><%= sub.seats ?? '—' %></td>
  <td><%= sub.trialEnd ? it.h.when(sub.trialEnd) : '—' %></td>
  <td><%= it.h.when(sub.currentPeriodStart) %> – <%= it.h.when(sub.currentPeriodEnd) %></td>
  <td><%= sub.pendingChange ? JSON.stringify(sub.pendingChange) : '—' %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
</section>
<section aria-labelledby="members-heading">
<h2 id="members-heading">Members</h2>
<% if (!it.d.members.length) { %><p>No members.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Members" tabindex="0">
<table>
<thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Member since</th></tr></thead>
<tbody>
<% for (const m of it.d.members) { %>
<tr><td><%= m.email %></td><td><%= m.role %></td><td><%= it.h.when(m.since) %></td></tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
</section>
<section aria-labelledby="invoices-heading">
<h2 id="invoices-heading">Billing history</h2>
<% if (!it.d.invoices.length) { %><p>No paid invoices.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Billing history" tabindex="0">
<table>
<thead><tr><th scope="col">Invoice</th><th scope="col" class="num">Paid</th><th scope="col">Paid at</th><th scope="col">Period</th></tr></thead>
<tbody>
<% for (const inv of it.d.invoices) { %>
<tr>
  <td><% if (inv.hostedInvoiceUrl && /^https?:\/\//.test(inv.hostedInvoiceUrl)) { %><a href="<%= inv.hostedInvoiceUrl %>" rel="noopener noreferrer"><%= inv.invoiceId %></a><% } else { %><%= inv.invoiceId %><% } %></td>
  <td class="num"><%= it.h.money(inv.amountPaid, inv.currency) %></td>
  <td><%= it.h.when(inv.paidAt) %></td>
  <td><%= it.h.when(inv.periodStart) %> – <%= it.h.when(inv.periodEnd) %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
</section>
<section aria-labelledby="events-heading">
<h2 id="events-heading">Webhook events</h2>
<%~ include('@eventsTable', { rows: it.d.events, replayable: it.replayable, csrf: it.operator.csrfToken, back: it.back, h: it.h }) %>
<p><a href="/console/events?organisation_id=<%= o.id %>">All of its webhook events</a></p>
</section>
<section aria-labelledby="notifications-heading">
<h2 id="notifications-heading">Notifications</h2>
<% if (!it.d.notifications.length) { %><p>No notifications.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Notifications" tabindex="0">
<table>
<thead><tr><th scope="col">Webhook id</th><th scope="col">Type</th><th scope="col" class="num">Version</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>
<% for (const n of it.d.notifications) { %>
<tr>
  <td><code><%= n.id %></code></td><td><%= n.type %></td><td class="num"><%= n.version %></td>
  <td><span class="badge badge-<%= n.status %>"><%= n.status %></span><%= n.lastError ? ' (' + n.lastError + ')' : '' %></td>
  <td><%= it.h.when(n.createdAt) %></td>
  <td><% if (n.status !== 'delivered') { %><%~ include('@action', { action: '/console/notifications/' + encodeURIComponent(n.id) + '/retry', csrf: it.operator.csrfToken, back: it.back, text: 'Retry', label: 'Retry notification ' + n.id }) %><% } %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
</section>
<section aria-labelledby="audit-heading">
<h2 id="audit-heading">Audit trail</h2>
<%~ include('@auditTable', { rows: it.d.audit, h: it.h }) %>
</section>
`;

const events = String.raw`<% layout('@layout') %>
<form class="filters" method="get" action="/console/events">
  <label for="status">Status
    <select id="status" name="status">
      <option value="">any</option>
<% for (const st of it.statuses) { %>      <option<%~ st === it.f.status ? ' selected' : '' %>><%= st %></option>
<% } %>
    </select>
  </label>
  <label for="type">Type
    <select id="type" name="type">
      <option value="">any</option>
<% for (const ty of it.types) { %>      <option<%~ ty === it.f.type ? ' selected' : '' %>><%= ty %></option>
<% } %>
    </select>
  </label>
  <label for="from">Received from (UTC)<input type="date" id="from" name="from" value="<%= it.f.from || '' %>"></label>
  <label for="to">to (UTC, inclusive)<input type="date" id="to" name="to" value="<%= it.f.to || '' %>"></label>
<% if (it.f.organisation_id) { %><input type="hidden" name="organisation_id" value="<%= it.f.organisation_id %>"><% } %>
  <button type="submit" class="primary">Filter</button>
</form>
<%~ include('@eventsTable', { rows: it.rows, replayable: it.replayable, csrf: it.operator.csrfToken, back: it.back, h: it.h, empty: ' match these filters' }) %>
<nav class="pager" aria-label="Pages">
<% if (it.before) { %><a href="/console/events<%= it.h.params(it.f) %>">First page</a><% } %>
<% if (it.next) { %><a href="/console/events<%= it.h.params({ ...it.f, before: it.next }) %>">Next page</a><% } %>
</nav>
`;

const event = String.raw`<% layout('@layout') %>
<% const e = it.e; %>
<dl class="facts">
  <dt>Type</dt><dd><%= e.type %></dd>
  <dt>Status</dt><dd><span class="badge badge-<%= e.status %>"><%= e.status %></span><%= e.reason ? ' — ' + e.reason : '' %></dd>
  <dt>Organisation</dt><dd><% if (e.organisationId) { %><a href="/console/organisations/<%= e.organisationId %>"><%= e.organisationId %></a><% } else { %>none matched<% } %></dd>
  <dt>Customer</dt><dd><%= e.customerId || '—' %></dd>
  <dt>Subscription</dt><dd><%= e.subscriptionId || '—' %></dd>
  <dt>Created (provider)</dt><dd><%= it.h.when(e.created) %></dd>
  <dt>Received</dt><dd><%= it.h.when(e.receivedAt) %> (<%= e.source %>, <%= e.attempts %> deliver<%= e.attempts === 1 ? 'y' : 'ies' %>)</dd>
  <dt>Processed</dt><dd><%= it.h.when(e.processedAt) %></dd>
</dl>
<% if (e.replayable) { %>
<p><%~ include('@action', { action: '/console/events/' + encodeURIComponent(e.id) + '/replay', csrf: it.operator.csrfToken, back: it.back, text: 'Replay this event' }) %></p>
<% } else { %>
<p class="muted">Only a failed or unmatched event can be replayed; this one's outcome is final.</p>
<% } %>
<h2>Payload (as received and verified)</h2>
<pre tabindex="0" aria-label="Payload"><code><%= e.payload %></code></pre>
`;

const notifications = String.raw`<% layout('@layout') %>
<nav aria-label="Filter by status"><ul class="pager">
<% for (const st of ['pending', 'failed', 'delivered', '']) { %>
  <li><a href="/console/notifications<%= it.h.params({ status: st }) %>"<% if ((it.status || '') === st) { %> aria-current="page"<% } %>><%= st || 'all' %></a></li>
<% } %>
</ul></nav>
<% if (!it.rows.length) { %><p>No <%= it.status || '' %> notifications.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Notifications" tabindex="0">
<table>
<thead><tr><th scope="col">Webhook id</th><th scope="col">Type</th><th scope="col">Organisation</th><th scope="col">Status</th><th scope="col">Deliveries</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>
<% for (const n of it.rows) { %>
<tr>
  <td><code><%= n.id %></code></td>
  <td><%= n.type %> v<%= n.version %></td>
  <td><a href="/console/organisations/<%= n.organisationId %>"><%= n.organisationId %></a></td>
  <td><span class="badge badge-<%= n.status %>"><%= n.status %></span></td>
  <td><% for (const d of n.deliveries) { %><div><%= d.url %>: <%= d.status %>, <%= d.attempts %> attempt<%= d.attempts === 1 ? '' : 's' %><%= d.lastError ? ' (' + d.lastError + ')' : '' %></div><% } %></td>
  <td><%= it.h.when(n.createdAt) %></td>
  <td><% if (n.status !== 'delivered') { %><%~ include('@action', { action: '/console/notifications/' + encodeURIComponent(n.id) + '/retry', csrf: it.operator.csrfToken, back: it.back, text: 'Retry', label: 'Retry notification ' + n.id }) %><% } %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
`;

const reconciliation = String.raw`<% layout('@layout') %>
<p>The reconciliation walks the provider's events and subscriptions and applies what webhooks missed. Runs are
listed whoever started them (the schedule, the CLI's <code>provider:sync</code>, or this page).</p>
<p><%~ include('@action', { action: '/console/reconciliation/run', csrf: it.operator.csrfToken, text: 'Run now' }) %></p>
<% if (!it.runs.length) { %><p>No runs recorded yet.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Reconciliation runs" tabindex="0">
<table>
<thead><tr><th scope="col">Started</th><th scope="col">By</th><th scope="col">Outcome</th><th scope="col">Finished</th><th scope="col">Summary</th></tr></thead>
<tbody>
<% for (const r of it.runs) { %>
<tr>
  <td><%= it.h.when(r.startedAt) %></td><td><%= r.trigger %></td>
  <td><span class="badge badge-<%= r.outcome %>"><%= r.outcome %></span></td>
  <td><%= it.h.when(r.finishedAt) %></td>
  <td><% if (r.summary) { %><%= r.summary.events_seen %> events seen, <%= r.summary.events_applied %> applied; <%= r.summary.subscriptions_checked %> subscriptions checked, <%= r.summary.subscriptions_corrected %> corrected<% } else if (r.error) { %><%= r.error %><% } %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
`;

const audit = String.raw`<% layout('@layout') %>
<p>Every change made through the admin API, the subscription-change routes, the operator CLI and this console, newest first.</p>
<%~ include('@auditTable', { rows: it.rows, h: it.h }) %>
<nav class="pager" aria-label="Pages">
<% if (it.after) { %><a href="/console/audit">First page</a><% } %>
<% if (it.next) { %><a href="/console/audit<%= it.h.params({ after: it.next }) %>">Next page</a><% } %>
</nav>
`;

export const TEMPLATES = {
  layout,
  signIn,
  signedIn,
  signedOut,
  link,
  error,
  overview,
  action,
  eventsTable,
  auditTable,
  organisations,
  organisation,
  events,
  event,
  notifications,
  reconciliation,
  audit,
};
