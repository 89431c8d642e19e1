// What `scripts/deploy --first` uploads under each platform worker's name before the real
// deploys: the platform workers bind one another over Service Bindings (the four others bind
// events; the ledger's runner and config workers, deployed before events, bind the four others),
// and Cloudflare refuses a binding to a Worker that does not exist yet, so on a fresh account some
// Worker has to be there first. The real deploy replaces it a few seconds later; until then it
// answers 503.
export default {
  fetch() {
    return Response.json(
      { error: { code: "service_unavailable", message: "this worker is being deployed; retry shortly" } },
      { status: 503, headers: { "retry-after": "5" } },
    );
  },
};
