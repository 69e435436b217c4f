/**
 * The one HTML document every page route answers with. It carries no data: the script reads the
 * URL and fetches the public API, so nothing from spans is ever interpolated into markup here.
 */
export const PAGE_SHELL = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>keyscope</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/page.css">
<script defer src="/assets/page.js"></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="site-header">
<a class="brand" href="/">keyscope</a>
<nav aria-label="Pages">
<ul>
<li><a href="/" data-nav="incidents">Incidents</a></li>
<li><a href="/scopes" data-nav="scopes">Scope report</a></li>
<li><a href="/routing-events" data-nav="routing-events">Routing events</a></li>
</ul>
</nav>
<form class="key-search" id="key-search" role="search" action="/keys" method="get">
<label for="key-search-input">Look up a key</label>
<input id="key-search-input" name="key" type="search" required autocomplete="off" autocapitalize="off" spellcheck="false" enterkeyhint="go" placeholder="idempotency key">
<button type="submit" class="secondary small">Go</button>
</form>
<div class="session" id="session"></div>
</header>
<div id="notice" class="notice" role="alert" aria-live="assertive"></div>
<main id="main" tabindex="-1"><p class="loading">Loading…</p>
<noscript><p>keyscope's page needs JavaScript. The same data is at <a href="/api/v1/incidents">/api/v1/incidents</a>.</p></noscript>
</main>
</body>
</html>
`;

/**
 * Scripts and styles only from this origin, no inline script or handler attributes, requests only
 * to this origin: even a rendering bug that let span text become markup could not run it.
 */
export const PAGE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');
