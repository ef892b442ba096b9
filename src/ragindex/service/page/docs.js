// Starts Swagger UI on /docs (a file, not an inline script, so the page's Content-Security-Policy can forbid those).
"use strict";
(function () {
  const node = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: node.dataset.openapi,
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: false,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
    layout: "BaseLayout",
  });
})();
