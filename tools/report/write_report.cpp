#include "tools/report/write_report.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "tools/report/report_html.hpp"
#include "tuned/error.hpp"

namespace tuned::report {

Written write_report(cache::Database& db, const Scope& scope, const std::string& path,
                     const std::string& title) {
  const auto start = std::chrono::steady_clock::now();
  const Report report = gather(db, scope);
  const std::string page = render_html(report, title);
  if (path == "-") {
    std::cout << page << std::flush;
  } else {
    const std::string partial = path + ".partial";
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << page;
    out.close();
    std::error_code ec;
    if (out) std::filesystem::rename(partial, path, ec);
    if (!out || ec) {
      const std::string why = !out ? std::strerror(errno) : ec.message();
      std::filesystem::remove(partial, ec);
      throw Error(TUNED_STATUS_INVALID_ARGUMENT, "'" + path + "': cannot write it (" + why + ")");
    }
  }
  Written written;
  written.bytes = page.size();
  written.devices = report.devices.size();
  for (const auto& device : report.devices) written.bests += device.bests.size();
  written.trials = report.trials;
  written.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return written;
}

std::string describe(const Written& written, const std::string& path) {
  char text[512];
  std::snprintf(text, sizeof text,
                "wrote %s (%zu KB): %zu device(s), %zu bests, %lld trials, in %.2f s", path.c_str(),
                (written.bytes + 1023) / 1024, written.devices, written.bests,
                static_cast<long long>(written.trials), written.seconds);
  return text;
}

}  // namespace tuned::report
