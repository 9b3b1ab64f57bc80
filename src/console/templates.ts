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
<link rel="stylesheet" href="/console/assets/console.css">
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
<p>The console is for the people who run this service. To sign in, ask for a one-time link on a machine
with access to the service's configuration:</p>
<pre><code>npm run -s cli -- console:link --email you@example.com</code></pre>
<p>The link works once, for 15 minutes unless <code>--ttl-minutes</code> says otherwise, and keeps you signed in for 12 hours.</p>
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

export const TEMPLATES = { layout, signIn, link, error, overview };
