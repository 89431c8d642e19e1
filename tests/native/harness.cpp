#include "tests/native/harness.h"

#include "shared/bytes.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ss {
App make_leads_app();
App make_cms_app();
App make_monitoring_app();
App make_analytics_app();
App make_events_app();
}  // namespace ss

namespace ss::native {

namespace {

json ok_result(const json& effect, json value) {
  return json{{"id", effect["id"]}, {"ok", true}, {"value", std::move(value)}};
}

json error_result(const json& effect, const std::string& code, const std::string& message) {
  return json{
      {"id", effect["id"]}, {"ok", false}, {"error", {{"code", code}, {"message", message}}}};
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string sha256_hex(const std::string& data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return hex_encode(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

std::string hmac_sha256_hex(const std::string& key, const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, &len);
  return hex_encode(std::string_view(reinterpret_cast<const char*>(digest), len));
}

json drive(Runtime& runtime, json message, std::int64_t& now_ms, const Performer& perform) {
  message["now"] = now_ms;
  std::uint32_t id = runtime.start(dump_json(message));
  if (id == 0) return json{{"error", "bad message"}};
  std::multimap<std::int64_t, json> sleepers;  // wake time -> effect
  while (runtime.state(id) == Runtime::State::waiting) {
    json effects = json::parse(runtime.data(id), nullptr, false);
    json results = json::array();
    for (const json& e : effects) {
      if (string_or(e, "kind", "") == "sleep") {
        sleepers.emplace(now_ms + int_or(e, "ms", 0), e);
      } else {
        results.push_back(perform(e));
      }
    }
    if (results.empty() && !sleepers.empty()) {
      auto first = sleepers.begin();
      now_ms = std::max(now_ms, first->first);
      results.push_back(ok_result(first->second, json::object()));
      sleepers.erase(first);
    }
    runtime.resume(id, dump_json(json{{"now", now_ms}, {"results", results}}));
  }
  json out = json::parse(runtime.data(id), nullptr, false);
  runtime.drop(id);
  return out;
}

json HttpReply::body_json() const { return json::parse(body, nullptr, false); }

std::string HttpReply::header(const std::string& name) const {
  return string_or(headers, name, "");
}

SqliteDb::SqliteDb(const std::string& migrations_dir) {
  sqlite3_open(":memory:", &db_);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(migrations_dir)) {
    if (entry.path().extension() == ".sql") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    char* err = nullptr;
    if (sqlite3_exec(db_, read_file(f).c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::fprintf(stderr, "migration %s failed: %s\n", f.c_str(), err ? err : "?");
      sqlite3_free(err);
      std::abort();
    }
  }
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

json SqliteDb::execute(const std::string& sql, const json& params) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    return json{{"error", sqlite3_errmsg(db_)}};
  }
  int index = 1;
  for (const json& p : params.is_array() ? params : json::array()) {
    if (p.is_null()) {
      sqlite3_bind_null(stmt, index);
    } else if (p.is_boolean()) {
      sqlite3_bind_int(stmt, index, p.get<bool>() ? 1 : 0);
    } else if (p.is_number_integer()) {
      sqlite3_bind_int64(stmt, index, p.get<std::int64_t>());
    } else if (p.is_number()) {
      sqlite3_bind_double(stmt, index, p.get<double>());
    } else if (p.is_string()) {
      const auto& s = p.get_ref<const std::string&>();
      sqlite3_bind_text(stmt, index, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    } else {
      std::string s = dump_json(p);
      sqlite3_bind_text(stmt, index, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    }
    ++index;
  }
  json rows = json::array();
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    json row = json::object();
    for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
      const char* name = sqlite3_column_name(stmt, c);
      switch (sqlite3_column_type(stmt, c)) {
        case SQLITE_INTEGER:
          row[name] = sqlite3_column_int64(stmt, c);
          break;
        case SQLITE_FLOAT:
          row[name] = sqlite3_column_double(stmt, c);
          break;
        case SQLITE_NULL:
          row[name] = nullptr;
          break;
        default:
          row[name] = std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, c)),
                                  static_cast<std::size_t>(sqlite3_column_bytes(stmt, c)));
      }
    }
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) {
    json err{{"error", sqlite3_errmsg(db_)}};
    sqlite3_finalize(stmt);
    return err;
  }
  sqlite3_finalize(stmt);
  return json{
      {"results", std::move(rows)},
      {"meta",
       {{"changes", sqlite3_changes(db_)}, {"last_row_id", sqlite3_last_insert_rowid(db_)}}}};
}

json SqliteDb::batch(const json& statements) {
  sqlite3_exec(db_, "BEGIN", nullptr, nullptr, nullptr);
  json out = json::array();
  for (const json& s : statements.is_array() ? statements : json::array()) {
    json r = execute(string_or(s, "sql", ""), s.contains("params") ? s["params"] : json::array());
    if (r.contains("error")) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return r;
    }
    out.push_back(std::move(r));
  }
  sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  return out;
}

json SqliteDb::rows(const std::string& sql) {
  json r = execute(sql, json::array());
  return r.contains("results") ? r["results"] : json::array();
}

struct Mesh::Worker {
  std::unique_ptr<App> app;
  std::unique_ptr<Runtime> runtime;
  json env = json::object();
};

Mesh::Mesh() {
  struct Spec {
    const char* name;
    App (*make)();
    const char* service_binding;
  };
  const Spec specs[] = {{"leads", make_leads_app, "LEADS_SERVICE"},
                        {"cms", make_cms_app, "CMS_SERVICE"},
                        {"monitoring", make_monitoring_app, "MONITOR_SERVICE"},
                        {"analytics", make_analytics_app, "ANALYTICS_SERVICE"},
                        {"events", make_events_app, "EVENTS_SERVICE"}};
  for (const Spec& s : specs) {
    auto w = std::make_unique<Worker>();
    w->app = std::make_unique<App>(s.make());
    w->runtime = std::make_unique<Runtime>(*w->app);
    w->env["PLATFORM_ADMIN_TOKEN"] = kAdminToken;
    databases_[w->app->db_binding] =
        std::make_unique<SqliteDb>(std::string(SS_SOURCE_DIR) + "/migrations/" + s.name);
    service_bindings_[s.service_binding] = s.name;
    workers_[s.name] = std::move(w);
  }
}

Mesh::~Mesh() = default;

void Mesh::set_env(const std::string& worker, const std::string& key, const std::string& value) {
  workers_.at(worker)->env[key] = value;
}

SqliteDb& Mesh::db(const std::string& binding) { return *databases_.at(binding); }

std::string Mesh::entropy_hex(std::size_t bytes) {
  std::string raw;
  for (std::size_t i = 0; i < bytes; ++i) raw.push_back(static_cast<char>(rng_() & 0xFF));
  return hex_encode(raw);
}

json Mesh::drive_worker(Worker& w, json message) {
  message["entropy"] = entropy_hex(32);
  message["env"] = w.env;
  return drive(*w.runtime, std::move(message), now_ms,
               [this](const json& effect) { return perform(effect); });
}

HttpReply Mesh::request(const std::string& worker, const std::string& method,
                        const std::string& path, const std::map<std::string, std::string>& headers,
                        const std::string& body) {
  json h = json::object();
  for (const auto& [k, v] : headers) {
    std::string key = k;
    std::transform(key.begin(), key.end(), key.begin(), ::tolower);
    h[key] = v;
  }
  json msg{{"op", "fetch"},
           {"request",
            {{"method", method},
             {"url", "https://" + worker + ".test" + path},
             {"headers", h},
             {"body", body}}}};
  json out = drive_worker(*workers_.at(worker), std::move(msg));
  HttpReply reply;
  reply.status = static_cast<int>(int_or(out, "status", 0));
  if (out.contains("headers")) reply.headers = out["headers"];
  reply.body = string_or(out, "body", "");
  return reply;
}

json Mesh::message(const std::string& worker, json message) {
  return drive_worker(*workers_.at(worker), std::move(message));
}

void Mesh::provision(const std::string& tenant, const std::string& token,
                     const std::string& admin_token, const json& config,
                     const std::string& worker) {
  json body{{"token", token},
            {"adminToken", admin_token},
            {"config", config.is_object() ? config : json::object()}};
  for (const auto& [name, w] : workers_) {
    if (!worker.empty() && name != worker) continue;
    HttpReply r = request(name, "PUT", "/admin/tenants/" + tenant,
                          {{"Authorization", std::string("Bearer ") + kAdminToken},
                           {"Content-Type", "application/json"}},
                          dump_json(body));
    if (r.status != 200 && r.status != 201) {
      std::fprintf(stderr, "provision %s on %s failed: %d %s\n", tenant.c_str(), name.c_str(),
                   r.status, r.body.c_str());
      std::abort();
    }
  }
}

std::map<std::string, std::string> Mesh::tenant_headers(const std::string& tenant,
                                                        const std::string& token) {
  return {{"X-SiteSwarm-Tenant-Id", tenant},
          {"X-SiteSwarm-Tenant-Token", token},
          {"X-SiteSwarm-Capability-Version", "1.0.0"}};
}

json Mesh::perform(const json& effect) {
  std::string kind = string_or(effect, "kind", "");
  effect_kinds.push_back(kind);
  if (fail_effect && fail_effect(effect)) return error_result(effect, "injected_fault", kind);
  std::string binding = string_or(effect, "binding", "");
  if (kind.rfind("d1.", 0) == 0) {
    auto db = databases_.find(binding);
    if (db == databases_.end()) return error_result(effect, "binding_missing", binding);
    json r = kind == "d1.batch"
                 ? db->second->batch(effect["statements"])
                 : db->second->execute(string_or(effect, "sql", ""), effect["params"]);
    if (r.is_object() && r.contains("error")) {
      return error_result(effect, "d1_error", string_or(r, "error", ""));
    }
    if (kind == "d1.first") {
      const json& rows = r["results"];
      return ok_result(effect, json{{"row", rows.empty() ? json(nullptr) : rows[0]}});
    }
    if (kind == "d1.run") return ok_result(effect, json{{"meta", r["meta"]}});
    return ok_result(effect, r);
  }
  if (kind == "kv.get") {
    auto it = kv_.find(binding + "/" + string_or(effect, "key", ""));
    if (it == kv_.end() || (it->second.expires_at_ms && it->second.expires_at_ms <= now_ms)) {
      return ok_result(effect, json{{"value", nullptr}});
    }
    return ok_result(effect, json{{"value", it->second.value}});
  }
  if (kind == "kv.put") {
    std::int64_t ttl = int_or(effect, "ttlSeconds", 0);
    kv_[binding + "/" + string_or(effect, "key", "")] =
        KvEntry{string_or(effect, "value", ""), ttl > 0 ? now_ms + ttl * 1000 : 0};
    return ok_result(effect, json::object());
  }
  if (kind == "kv.delete") {
    kv_.erase(binding + "/" + string_or(effect, "key", ""));
    return ok_result(effect, json::object());
  }
  if (kind == "service") {
    auto target = service_bindings_.find(binding);
    if (target == service_bindings_.end()) return error_result(effect, "binding_missing", binding);
    json out = drive_worker(*workers_.at(target->second),
                            json{{"op", "fetch"}, {"request", effect["request"]}});
    return ok_result(
        effect,
        json{{"status", out["status"]}, {"headers", out["headers"]}, {"body", out["body"]}});
  }
  if (kind == "fetch") {
    if (!fetch_stub) return error_result(effect, "network_error", "no network in tests");
    StubReply reply = fetch_stub(effect);
    now_ms += reply.elapsed_ms;
    if (reply.network_error) {
      json r = error_result(effect, "network_error", "connection refused");
      r["error"]["elapsedMs"] = reply.elapsed_ms;
      return r;
    }
    json headers = json::object();
    for (const auto& [k, v] : reply.headers) headers[k] = v;
    return ok_result(effect, json{{"status", reply.status},
                                  {"headers", headers},
                                  {"body", reply.body},
                                  {"elapsedMs", reply.elapsed_ms}});
  }
  if (kind == "queue.send") {
    queue_sent[binding].push_back(effect["body"]);
    return ok_result(effect, json::object());
  }
  if (kind == "ae.write") {
    analytics_points.push_back(effect);
    return ok_result(effect, json::object());
  }
  if (kind == "ratelimit") {
    int n = ++rate_counts_[binding + "/" + string_or(effect, "key", "")];
    return ok_result(effect, json{{"success", n <= rate_limit_per_key}});
  }
  if (kind == "crypto.sha256") {
    return ok_result(effect, json{{"hex", sha256_hex(string_or(effect, "data", ""))}});
  }
  if (kind == "crypto.hmac_sha256") {
    return ok_result(effect, json{{"hex", hmac_sha256_hex(string_or(effect, "key", ""),
                                                          string_or(effect, "data", ""))}});
  }
  if (kind == "crypto.random") {
    return ok_result(effect,
                     json{{"hex", entropy_hex(static_cast<std::size_t>(std::clamp<std::int64_t>(
                                      int_or(effect, "bytes", 16), 1, 1024)))}});
  }
  return error_result(effect, "unsupported_effect", kind);
}

}  // namespace ss::native
