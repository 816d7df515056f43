# placeholder: install rules and the CMake package config
