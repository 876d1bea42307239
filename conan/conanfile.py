# Conan 2 recipe for Tessera: the scheduler library (libtessera), the tessera.v1 messages
# (libtessera_proto) and the header-only plugin SDK, built from this checkout with CMake.
#
#   conan create conan -pr:a conan/profiles/debian12 --build=missing   (scripts/conan-check.sh)
#
# Consumers use the CMake package Tessera's own install writes (lib/cmake/Tessera), the same
# find_package(Tessera) / tessera::scheduler that tests/consumer checks, rather than one generated
# by CMakeDeps; see conan/README.md for why.
import os
import re

from conan import ConanFile
from conan.errors import ConanException, ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load


class TesseraConan(ConanFile):
    name = "tessera"
    description = "Embeddable GPU job scheduler"
    topics = ("scheduler", "gpu", "hpc", "fair-share")
    # The CMake always builds libtessera and libtessera_proto shared: no shared/fPIC options.
    package_type = "shared-library"
    settings = "os", "arch", "compiler", "build_type"

    # The parts of the repository the library, the messages and the SDK build from. Tests,
    # benchmarks, examples and plugins stay out: the recipe turns them off.
    _source_parts = ("CMakeLists.txt", "cmake/*", "proto/*", "sdk/*", "libscheduler/*")

    def set_version(self):
        # One version for the project and the package: project(Tessera VERSION x.y.z ...).
        text = load(self, os.path.join(self.recipe_folder, "..", "CMakeLists.txt"))
        match = re.search(r"project\(\s*Tessera\s+VERSION\s+([0-9][0-9.]*)", text)
        if not match:
            raise ConanException("no project(Tessera VERSION ...) in CMakeLists.txt")
        self.version = match.group(1)

    def export_sources(self):
        root = os.path.join(self.recipe_folder, "..")
        for pattern in self._source_parts:
            copy(self, pattern, src=root, dst=self.export_sources_folder,
                 excludes=("*/__pycache__/*", "*.db", "*.db-*"))

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        # What the top-level CMakeLists.txt find_package()s. The versions Debian 12 ships are the
        # tested ones; conan/profiles/debian12 declares them as platform requirements. Only
        # protobuf is part of the public interface (the API speaks tessera.v1 messages).
        self.requires("protobuf/[>=3.21.12 <4]", transitive_headers=True, transitive_libs=True)
        self.requires("sqlite3/[>=3.40 <4]")
        self.requires("boost/[>=1.74 <2]")  # headers only: Asio, DLL (on std::filesystem)
        self.requires("spdlog/[>=1.10 <2]")
        self.requires("yaml-cpp/[>=0.7 <0.9]")

    def build_requirements(self):
        self.tool_requires("protobuf/<host_version>")  # protoc, for the tessera.v1 messages

    def validate(self):
        if self.settings.os != "Linux":
            raise ConanInvalidConfiguration("Tessera builds on Linux only (dlopen, POSIX)")
        check_min_cppstd(self, 20)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["TESSERA_BUILD_TESTS"] = False
        tc.cache_variables["TESSERA_BUILD_BENCH"] = False
        tc.cache_variables["TESSERA_BUILD_EXAMPLES"] = False
        tc.cache_variables["TESSERA_BUILD_PLUGINS"] = False
        tc.cache_variables["TESSERA_BUILD_REPLAY"] = False
        tc.generate()
        # Writes find_package() files for dependencies that Conan built. Platform requirements
        # (the debian12 profile) get none, and find_package() finds the system's own
        # configs and CMake's find modules as in a plain build.
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        CMake(self).install()

    def package_info(self):
        # CMake: the installed TesseraConfig.cmake is the interface (targets tessera::scheduler,
        # tessera::proto, tessera::plugin_sdk, tessera::plugin_conformance). CMakeDeps writes
        # nothing for this package; CMakeToolchain puts the builddir on CMAKE_PREFIX_PATH so that
        # find_package(Tessera CONFIG) finds it.
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.set_property("cmake_file_name", "Tessera")
        cmake_dir = os.path.join("lib", "cmake", "Tessera")

        # Other generators (PkgConfigDeps, ...) and Conan's own model: the same three parts.
        proto = self.cpp_info.components["proto"]
        proto.libs = ["tessera_proto"]
        proto.requires = ["protobuf::libprotobuf"]
        proto.set_property("pkg_config_name", "tessera-proto")

        sdk = self.cpp_info.components["plugin_sdk"]
        sdk.libs = []
        sdk.libdirs = []
        sdk.requires = ["proto", "protobuf::libprotobuf"]
        sdk.system_libs = ["pthread", "dl"]
        sdk.set_property("pkg_config_name", "tessera-plugin-sdk")

        scheduler = self.cpp_info.components["scheduler"]
        scheduler.libs = ["tessera"]
        scheduler.requires = ["proto", "protobuf::libprotobuf", "sqlite3::sqlite3",
                              "boost::headers", "spdlog::spdlog", "yaml-cpp::yaml-cpp"]
        scheduler.system_libs = ["pthread", "dl"]
        scheduler.set_property("pkg_config_name", "tessera")
        # With components, generators read the components' builddirs, not the package's.
        scheduler.builddirs = [cmake_dir]
